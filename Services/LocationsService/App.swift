import ArgumentParser
import Foundation
import Hummingbird
import Logging
import Metrics
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
        subcommands: [Serve.self, Migrate.self, Replay.self, HealthCheck.self],
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
            "replay: read \(summary.events) events (+\(summary.caughtUp) caught up) in \(String(format: "%.2f", summary.seconds)) s, \(rate) events/s; \(summary.pins) pins in the read model"
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

struct HealthCheck: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "healthcheck", abstract: HealthCheckCommand.abstract)
    func run() throws { throw ExitCode(HealthCheckCommand.run(service: "locations-service", defaultPort: ServiceConfiguration.defaultPort)) }
}

func commandLogger(_ configuration: ServiceConfiguration) -> Logger {
    var logger = Logger(label: "locations-service")
    logger.logLevel = configuration.logLevel
    return logger
}
