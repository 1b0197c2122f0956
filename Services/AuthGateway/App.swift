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
            GEOCODER_URL, TILE_URL, SESSION_TTL and LOG_LEVEL.
            """,
        subcommands: [Serve.self, Migrate.self, HealthCheck.self],
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
        try await buildApplication(configuration, registry: registry).runService()
    }
}

struct Migrate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Apply pending migrations of schema auth and exit.")

    func run() async throws {
        let (database, level) = configurationOrExit("auth-gateway") { environment throws(ConfigurationError) in
            let reader = EnvironmentReader(environment)
            return (try reader.database(), try reader.logLevel())
        }
        var logger = Logger(label: "auth-gateway")
        logger.logLevel = level
        try await withPostgresClient(database, logger: logger) { [logger] client in
            try await Migrations.migrator(client, logger: logger).migrate()
        }
        print("schema auth is up to date (migration \(Migrations.all.last?.version ?? 0))")
    }
}

struct HealthCheck: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "healthcheck", abstract: HealthCheckCommand.abstract)
    func run() throws { throw ExitCode(HealthCheckCommand.run(service: "auth-gateway", defaultPort: GatewayConfiguration.defaultPort)) }
}
