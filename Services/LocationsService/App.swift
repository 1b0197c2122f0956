import ArgumentParser
import Foundation
import Hummingbird
import Logging
import Metrics
import OnTheMapShared
import PostgresNIO
import Prometheus
import ServiceKit

@main
struct LocationsServiceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "locations-service",
        abstract: "The On The Map event log of student pins, its latest-100 read model, and replay.",
        discussion: """
            Configuration comes from the environment: DATABASE_URL (required), INTERNAL_TOKEN (required by \
            serve: the shared secret the gateway sends), PORT (default \(ServiceConfiguration.defaultPort)) and LOG_LEVEL.
            """,
        subcommands: [Serve.self, Migrate.self, Replay.self, Moderate.self, Ledger.self, Compact.self, HealthCheck.self],
        defaultSubcommand: Serve.self)
}

/// Reads the environment, or stops with one clear line.
func loadConfiguration(needsToken: Bool) -> ServiceConfiguration {
    configurationOrExit("locations-service") { environment throws(ConfigurationError) in
        try ServiceConfiguration.fromEnvironment(environment, needsToken: needsToken)
    }
}

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Serve the StudentLocation API (migrating the schema first). SIGTERM drains in-flight requests, then exits 0.")

    @Option(help: "Address to listen on. Use 0.0.0.0 inside a container.")
    var host = "127.0.0.1"

    @Option(help: "Port to listen on; overrides PORT.")
    var port: Int?

    func run() async throws {
        var configuration = loadConfiguration(needsToken: true)
        configuration.host = host
        if let port { configuration.port = port }
        let registry = PrometheusCollectorRegistry()
        bootstrapMetrics(registry)
        try RequestTracing.bootstrap(serviceName: "locations-service")
        let app = buildApplication(configuration, registry: registry)
        try await app.runService()
    }
}

struct Migrate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Apply pending schema migrations and exit.")

    func run() async throws {
        let configuration = loadConfiguration(needsToken: false)
        let logger = commandLogger(configuration)
        try await withPostgresClient(configuration.database, logger: logger) { client in
            try await Migrations.migrator(client, logger: logger).migrate()
        }
        print("schema locations is up to date (migration \(Migrations.all.last?.version ?? 0))")
    }
}

struct Compact: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Rewrite the log's tables so that no erased student's data is left in their files.",
        discussion: """
            An erasure deletes rows; PostgreSQL keeps deleted row versions in the tables' files until they are \
            rewritten. This takes the statistics again and rewrites the event log, the read model, the pins' \
            versions and the statistics catalog (VACUUM FULL). Each table is locked while it is rewritten, so \
            run it when few write (nightly, or after each erasure on a small site).
            """)

    func run() async throws {
        let configuration = loadConfiguration(needsToken: false)
        let logger = commandLogger(configuration)
        try await withPostgresClient(configuration.database, logger: logger) { client in
            try await Migrations.migrator(client, logger: logger).migrate()
            try await Compaction.run(tables: Migrations.erasedTables, on: client, logger: logger)
        }
        print("the log's tables are rewritten: no erased row is left in them")
    }
}

struct Replay: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Rebuild the read model from the event log while the service keeps serving.",
        discussion: """
            Builds a shadow table from the log, catches up with writes that arrived meanwhile, then swaps it in \
            atomically. With --verify it compares the rebuilt table with the live one instead, prints every \
            difference, and exits 1 if there is any.
            """)

    @Flag(help: "Rebuild and compare with the live read model without swapping.")
    var verify = false

    func run() async throws {
        let configuration = loadConfiguration(needsToken: false)
        let logger = commandLogger(configuration)
        let summary = try await withPostgresClient(configuration.database, logger: logger) { client in
            try await Migrations.migrator(client, logger: logger).migrate()
            return try await Replayer(client: client, logger: logger).run(verify: verify) { ProgressReporter(total: $0) }
        }
        let rate = summary.seconds > 0 ? Int(Double(summary.events) / summary.seconds) : 0
        print(
            "replay: read \(summary.events) events (+\(summary.caughtUp) caught up) in \(String(format: "%.2f", summary.seconds)) s, \(rate) events/s; \(summary.pins) pins in the read model; \(summary.mapEvents) events of maps"
        )
        if verify {
            if summary.differenceCount == 0 {
                print("verify: the rebuilt read model matches the live one")
            } else {
                print("verify: \(summary.differenceCount) difference(s) between the live read model and the log:")
                for difference in summary.differences { print(difference) }
                throw ExitCode(1)
            }
        } else {
            print("replay: swapped the rebuilt read model in")
        }
    }
}

struct Moderate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Hide a pin from the map, or bring it back, as an event in the log with the operator as its actor.",
        discussion: """
            The running service, every replica, the gateways' live streams and a replay all see the change as \
            they see any other: a hidden pin leaves the list and every open map at once, and its owner cannot \
            change it until it is unhidden.
            """,
        subcommands: [Hide.self, Unhide.self])

    /// What both subcommands take.
    struct Options: ParsableArguments {
        @Argument(help: "The pin's objectId, as the list shows it.")
        var objectId: String

        @Option(name: .customLong("operator"), help: "Who is acting, kept in the event (default: the user logged in).")
        var operatorName: String?
    }

    struct Hide: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Take a pin off the map (LocationHidden).")

        @OptionGroup var options: Options

        @Option(help: "Why, kept in the event (at most 500 characters).")
        var reason: String

        func run() async throws {
            let (objectId, reason) = (ObjectID(options.objectId), reason)
            let (hidden, name) = try await moderate(options) { commands, context in
                try await commands.hide(objectId, reason: reason, context: context)
            }
            print("hid pin \(hidden.objectId) of \(hidden.uniqueKey): \(hidden.reason)")
            guard
                OperatorTask.recordInLedger(
                    .init(kind: .hidden, pin: hidden.objectId.description, operatorName: name, reason: hidden.reason), command: "locations-service")
            else { throw ExitCode(1) }
        }
    }

    struct Unhide: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Bring a hidden pin back, as it was hidden (LocationUnhidden).")

        @OptionGroup var options: Options

        func run() async throws {
            let objectId = ObjectID(options.objectId)
            let (location, name) = try await moderate(options) { commands, context in
                try await commands.unhide(objectId, context: context)
            }
            print("unhid pin \(location.objectId) of \(location.uniqueKey): back on the map")
            guard
                OperatorTask.recordInLedger(
                    .init(kind: .unhidden, pin: location.objectId.description, operatorName: name), command: "locations-service")
            else { throw ExitCode(1) }
        }
    }
}

/// Runs one moderation over the database with the operator as its actor: what it did and the operator's
/// name. A refusal is one line and exit 1.
private func moderate<T: Sendable>(
    _ options: Moderate.Options, _ body: @escaping @Sendable (LocationCommands, LocationCommands.Context) async throws -> T
) async throws -> (T, String) {
    guard let name = OperatorTask.operatorName(options.operatorName) else {
        OperatorTask.refuse("locations-service", "name the operator with --operator NAME (printable, at most 100 characters)")
        throw ExitCode(1)
    }
    do {
        let done = try await withOperatorCommands { commands, _ in
            let actor = Actor(key: OperatorTask.actorKey(name), firstName: name, lastName: "")
            // The operator moderates every map's pins.
            return try await body(commands, LocationCommands.Context(actor: actor, userAgent: "locations-service moderate", map: nil))
        }
        return (done, name)
    } catch let refusal as ModerationError {
        OperatorTask.refuse("locations-service", refusal.description)
        throw ExitCode(1)
    }
}

/// Runs `body` with the log's commands (and the database under them) over the migrated database `DATABASE_URL` names, as the operators'
/// commands need them: the appends announce themselves to the running replicas, and nothing is cached here.
private func withOperatorCommands<T: Sendable>(_ body: @escaping @Sendable (LocationCommands, Database) async throws -> T) async throws -> T {
    let configuration = loadConfiguration(needsToken: false)
    let logger = commandLogger(configuration)
    return try await withPostgresClient(configuration.database, logger: logger) { client in
        try await Migrations.migrator(client, logger: logger).migrate()
        let events = EventStore(database: Database(client: client, logger: logger))
        let log = PostgresLocationLog(events: events, posts: PostAppender(events: events), readModel: ReadModel(database: events.database))
        return try await body(LocationCommands(log: log, didAppend: {}), events.database)
    }
}

struct Ledger: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Re-apply the restore ledger's erasures and hides after a restore of the database.",
        discussion: """
            A restored database is as it was at the restore point: students erased since are back, and so are \
            pins hidden and maps deleted since. `apply` erases again every account the ledger (RESTORE_LEDGER, \
            or --ledger) records as erased at or after --since, hides or unhides again every pin it records and \
            deletes again every map, in the order they were done. Each is harmless when it was already done. scripts/restore.sh runs it \
            before any request is let in, then `auth-gateway ledger apply`.
            """,
        subcommands: [Apply.self])

    struct Apply: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Erase, hide and unhide again what the ledger records since a moment.")

        @Option(help: "The ledger's file (default: RESTORE_LEDGER).")
        var ledger: String?

        @Option(help: "Re-apply the records at or after this moment (RFC 3339, e.g. 2026-11-28T09:25:00Z).")
        var since: String

        func run() async throws {
            guard let records = try OperatorTask.ledgerRecords(path: ledger, since: since, command: "locations-service") else { throw ExitCode(1) }
            let applied = try await withOperatorCommands { commands, database in
                try await LedgerReplay(commands: commands, maps: MapStore(database: database)).apply(records)
            }
            print(
                "ledger: \(applied.erased) erasure(s) (\(applied.pins) pin(s) erased), \(applied.moderated) hide(s) and unhide(s), \(applied.mapsDeleted) map deletion(s) re-applied, \(applied.already) already in effect"
            )
        }
    }
}

struct HealthCheck: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "healthcheck", abstract: HealthCheckCommand.abstract)
    func run() throws { throw ExitCode(HealthCheckCommand.run(service: "locations-service", defaultPort: ServiceConfiguration.defaultPort)) }
}

func commandLogger(_ configuration: ServiceConfiguration) -> Logger {
    var logger = Logger(label: "locations-service")
    logger.logLevel = configuration.logLevel
    return logger
}
