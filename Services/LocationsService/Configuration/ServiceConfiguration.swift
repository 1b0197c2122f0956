import Logging

/// Everything the service reads from its environment, checked once at start-up.
struct ServiceConfiguration: Sendable {
    var database: DatabaseURL
    var host: String
    var port: Int
    var internalToken: String
    var logLevel: Logger.Level

    static let defaultPort = 8081

    init(database: DatabaseURL, host: String = "127.0.0.1", port: Int = defaultPort, internalToken: String,
         logLevel: Logger.Level = .info) {
        self.database = database
        self.host = host
        self.port = port
        self.internalToken = internalToken
        self.logLevel = logLevel
    }

    /// Reads `DATABASE_URL`, `PORT`, `INTERNAL_TOKEN` and `LOG_LEVEL`; the listening address is a command-line option.
    static func fromEnvironment(_ environment: [String: String], needsToken: Bool = true) throws(ConfigurationError) -> ServiceConfiguration {
        guard let url = environment["DATABASE_URL"], !url.isEmpty else {
            throw ConfigurationError("DATABASE_URL is not set (for example postgres://onthemap@127.0.0.1:5432/onthemap)")
        }
        let database = try DatabaseURL(url)
        let port: Int
        if let text = environment["PORT"], !text.isEmpty {
            guard let value = Int(text), (1...65535).contains(value) else {
                throw ConfigurationError("PORT must be a number from 1 to 65535, got \"\(text)\"")
            }
            port = value
        } else {
            port = defaultPort
        }
        let token = environment["INTERNAL_TOKEN"] ?? ""
        if needsToken, token.utf8.count < 16 {
            throw ConfigurationError("INTERNAL_TOKEN must be set to a shared secret of at least 16 characters")
        }
        let level: Logger.Level
        if let text = environment["LOG_LEVEL"], !text.isEmpty {
            guard let value = Logger.Level(rawValue: text.lowercased()) else {
                throw ConfigurationError("LOG_LEVEL must be one of trace, debug, info, notice, warning, error, critical; got \"\(text)\"")
            }
            level = value
        } else {
            level = .info
        }
        return ServiceConfiguration(database: database, port: port,
                                    internalToken: token, logLevel: level)
    }
}
