import ArgumentParser
import Foundation
import Hummingbird
import Logging
import Metrics
import Prometheus
import ServiceKit

@main
struct AuthGatewayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "auth-gateway",
        abstract: "The public On The Map API: sessions, identity, authorization, geocoding, in front of locations-service.",
        discussion: """
            Configuration comes from the environment: DATABASE_URL, LOCATIONS_URL and INTERNAL_TOKEN (required), \
            PORT (default \(GatewayConfiguration.defaultPort)), IDENTITY_PROVIDER (local or udacity), UDACITY_BASE_URL, \
            GEOCODER_URL, TILE_URL (or none: the built-in world map alone), BASEMAP_TILES (a PMTiles archive of \
            tiles the gateway serves itself), SESSION_TTL and LOG_LEVEL.
            """,
        subcommands: [Serve.self, Migrate.self, Accounts.self, Ledger.self, Compact.self, HealthCheck.self],
        defaultSubcommand: Serve.self)
}

/// Reads the environment, or stops with one clear line.
func loadConfiguration() -> GatewayConfiguration {
    configurationOrExit("auth-gateway") { environment throws(ConfigurationError) in
        try GatewayConfiguration.fromEnvironment(environment)
    }
}

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Serve the public API (migrating schema auth first). SIGTERM drains in-flight requests, then exits 0.")

    @Option(help: "Address to listen on.")
    var host = "0.0.0.0"

    @Option(help: "Port to listen on; overrides PORT.")
    var port: Int?

    func run() async throws {
        var configuration = loadConfiguration()
        configuration.host = host
        if let port { configuration.port = port }
        let registry = PrometheusCollectorRegistry()
        bootstrapMetrics(registry)
        try RequestTracing.bootstrap(serviceName: "auth-gateway")
        try await buildApplication(configuration, registry: registry).runService()
    }
}

struct Migrate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Apply pending migrations of schema auth and exit.")

    func run() async throws {
        try await withMigratedDatabase { _, _ in }
        print("schema auth is up to date (migration \(Migrations.all.last?.version ?? 0))")
    }
}

struct Compact: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Rewrite schema auth's tables so that no erased account is left in their files.",
        discussion: """
            An erasure deletes rows; PostgreSQL keeps deleted row versions in the tables' files until they are \
            rewritten. This takes the statistics again and rewrites the accounts, sessions, failed logins, write \
            allowances and erasures, and the statistics catalog (VACUUM FULL). Each table is locked while it is \
            rewritten (a moment, for these tables): run it with `locations-service compact`.
            """)

    func run() async throws {
        try await withMigratedDatabase { database, logger in
            try await Compaction.run(tables: Migrations.erasedTables, on: database.client, logger: logger)
        }
        print("schema auth's tables are rewritten: no erased row is left in them")
    }
}

/// Runs `body` on the database `DATABASE_URL` names (`LOG_LEVEL` for its logs), with schema auth migrated:
/// what the operators' commands need, and nothing `serve` needs.
func withMigratedDatabase<T: Sendable>(_ body: @escaping @Sendable (Database, Logger) async throws -> T) async throws -> T {
    let (database, level) = configurationOrExit("auth-gateway") { environment throws(ConfigurationError) in
        let reader = EnvironmentReader(environment)
        return (try reader.database(), try reader.logLevel())
    }
    var logger = Logger(label: "auth-gateway")
    logger.logLevel = level
    return try await withPostgresClient(database, logger: logger) { [logger] client in
        try await Migrations.migrator(client, logger: logger).migrate()
        return try await body(Database(client: client, logger: logger), logger)
    }
}

struct Accounts: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Disable an account, or enable it again.",
        discussion: """
            A disabled account's sessions end at once on every replica and it cannot log in until it is \
            enabled; its address stays taken, so nobody signs up again with it. Its pins stay; hide them with \
            locations-service moderate hide.
            """,
        subcommands: [Disable.self, Enable.self])

    struct Disable: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "End the account's sessions and refuse its logins.")

        @Argument(help: "The account's email address, in any spelling.")
        var email: String

        @Option(help: "Why, kept with the account.")
        var reason: String?

        @Option(name: .customLong("operator"), help: "Who is acting, kept with the account (default: the user logged in).")
        var operatorName: String?

        func run() async throws {
            guard let name = OperatorTask.operatorName(operatorName) else {
                OperatorTask.refuse("auth-gateway", "name the operator with --operator NAME (printable, at most 100 characters)")
                throw ExitCode(1)
            }
            let trimmed = reason?.trimmingCharacters(in: .whitespacesAndNewlines)
            let reason = trimmed?.isEmpty == false ? trimmed : nil
            let address = EmailAddress(email)
            let outcome = try await withMigratedDatabase { database, _ in
                try await PostgresAccountStore(database: database).disable(emailKey: address.key, by: name, reason: reason)
            }
            try Accounts.report(outcome, address: address, done: "disabled", already: "is disabled already") {
                "its sessions have ended and it cannot log in"
            }
            if case .done(let account) = outcome {
                guard
                    OperatorTask.recordInLedger(
                        .init(kind: .disabled, account: account.key, operatorName: name, reason: reason),
                        command: "auth-gateway")
                else { throw ExitCode(1) }
            }
        }
    }

    struct Enable: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Let a disabled account log in again.")

        @Argument(help: "The account's email address, in any spelling.")
        var email: String

        func run() async throws {
            let address = EmailAddress(email)
            let outcome = try await withMigratedDatabase { database, _ in
                try await PostgresAccountStore(database: database).enable(emailKey: address.key)
            }
            try Accounts.report(outcome, address: address, done: "enabled", already: "is not disabled") { "it can log in again" }
            if case .done(let account) = outcome {
                guard OperatorTask.recordInLedger(.init(kind: .enabled, account: account.key), command: "auth-gateway") else { throw ExitCode(1) }
            }
        }
    }

    /// One line of what was done, or of why nothing was (then exit 1).
    static func report(_ outcome: AccountSwitch, address: EmailAddress, done: String, already: String, then: () -> String) throws {
        switch outcome {
        case .done(let account):
            print("\(done) account \(account.key) (\(account.email)): \(then())")
        case .already(let account):
            OperatorTask.refuse("auth-gateway", "account \(account.key) (\(account.email)) \(already)")
            throw ExitCode(1)
        case .noAccount:
            OperatorTask.refuse("auth-gateway", "no account has the address \(address.text)")
            throw ExitCode(1)
        }
    }
}

struct Ledger: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Re-apply the restore ledger's erasures and disabled accounts after a restore of the database.",
        discussion: """
            A restored database is as it was at the restore point: students erased since are back, and so are \
            accounts an operator disabled or enabled since. `apply` erases again every account the ledger \
            (RESTORE_LEDGER, or --ledger) records as erased at or after --since, and disables or enables again \
            every account it records, in the order they were done. Each is harmless when it was already done. \
            Run `locations-service ledger apply` first, which erases the students' pins: scripts/restore.sh \
            runs both before any request is let in.
            """,
        subcommands: [Apply.self])

    struct Apply: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Erase, disable and enable again what the ledger records since a moment.")

        @Option(help: "The ledger's file (default: RESTORE_LEDGER).")
        var ledger: String?

        @Option(help: "Re-apply the records at or after this moment (RFC 3339, e.g. 2026-11-28T09:25:00Z).")
        var since: String

        func run() async throws {
            guard let records = try OperatorTask.ledgerRecords(path: ledger, since: since, command: "auth-gateway") else { throw ExitCode(1) }
            let (erased, switched) = try await withMigratedDatabase { database, _ in
                let accounts = PostgresAccountStore(database: database)
                var (erased, switched) = (0, 0)
                for record in records {
                    guard let key = record.account else { continue }
                    switch record.kind {
                    case .erased:
                        // Steps 1 and 3 of an erasure (`Erasures`); step 2, the pins, was locations-service's apply.
                        try await accounts.beginErasure(key: key)
                        try await accounts.finishErasure(key: key)
                        erased += 1
                    case .disabled, .enabled:
                        // As the operator did it: by the account's address, which names the same account.
                        guard let account = try await accounts.account(key: key) else { continue }
                        let emailKey = EmailAddress(account.email).key
                        let outcome =
                            record.kind == .disabled
                            ? try await accounts.disable(emailKey: emailKey, by: record.operatorName ?? "restore", reason: record.reason)
                            : try await accounts.enable(emailKey: emailKey)
                        if case .done = outcome { switched += 1 }
                    case .hidden, .unhidden, .mapDeleted:
                        continue
                    }
                }
                return (erased, switched)
            }
            print("ledger: \(erased) erasure(s) and \(switched) disabling(s) or enabling(s) re-applied")
        }
    }
}

struct HealthCheck: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "healthcheck", abstract: HealthCheckCommand.abstract)
    func run() throws { throw ExitCode(HealthCheckCommand.run(service: "auth-gateway", defaultPort: GatewayConfiguration.defaultPort)) }
}
