import Logging
import ServiceKit

/// Everything the service reads from its environment, checked once at start-up.
struct ServiceConfiguration: Sendable {
    var database: DatabaseURL
    var host: String
    var port: Int
    var internalToken: String
    var logLevel: Logger.Level
    /// Timeouts and per-address caps on connections; `MAX_CONNECTIONS_PER_CLIENT`, `TRUSTED_PROXIES`.
    var limits = ConnectionLimits()

    static let defaultPort = 8081

    init(
        database: DatabaseURL, host: String = "127.0.0.1", port: Int = defaultPort, internalToken: String,
        logLevel: Logger.Level = .info
    ) {
        self.database = database
        self.host = host
        self.port = port
        self.internalToken = internalToken
        self.logLevel = logLevel
    }

    /// Reads `DATABASE_URL`, `PORT`, `INTERNAL_TOKEN`, `LOG_LEVEL`, `MAX_CONNECTIONS_PER_CLIENT` and `TRUSTED_PROXIES`; the listening address is a command-line option.
    static func fromEnvironment(_ environment: [String: String], needsToken: Bool = true) throws(ConfigurationError) -> ServiceConfiguration {
        let reader = EnvironmentReader(environment)
        var configuration = ServiceConfiguration(
            database: try reader.database(), port: try reader.port(default: defaultPort),
            internalToken: needsToken ? try reader.internalToken() : "",
            logLevel: try reader.logLevel())
        configuration.limits = try reader.connectionLimits()
        return configuration
    }
}
