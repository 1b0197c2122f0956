import Logging
import OnTheMapShared
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
    /// Pins one student may have on the map at once (`PINS_PER_STUDENT`): a post past it takes the
    /// student's oldest pin off the map, so the latest 100 can never be one person's.
    var pinsPerStudent = PinCap.defaultPinsPerStudent
    /// Class maps whose newest pins are kept ready in memory at once (`MAP_CACHE_SIZE`), the least recently
    /// read dropped first.
    var mapCacheSize = defaultMapCacheSize
    /// The pgBackRest stanza whose last backup `/metrics` reports (`BACKUP_STANZA`); nil: no backups to watch.
    var backupStanza: String?
    /// Where a map moderator's hides and unhides and a map's deletion are recorded for a restore to do again
    /// (`RESTORE_LEDGER`); nil: not recorded.
    var restoreLedger: RestoreLedger?

    static let defaultPort = 8081
    static let defaultMapCacheSize = MapSlug.defaultCacheSize

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

    /// Reads `DATABASE_URL`, `PORT`, `INTERNAL_TOKEN`, `LOG_LEVEL`, `MAX_CONNECTIONS_PER_CLIENT`, `TRUSTED_PROXIES` and
    /// `PINS_PER_STUDENT`, `MAP_CACHE_SIZE`, `BACKUP_STANZA` and `RESTORE_LEDGER`; the listening address is a command-line option.
    static func fromEnvironment(_ environment: [String: String], needsToken: Bool = true) throws(ConfigurationError) -> ServiceConfiguration {
        let reader = EnvironmentReader(environment)
        var configuration = ServiceConfiguration(
            database: try reader.database(), port: try reader.port(default: defaultPort),
            internalToken: needsToken ? try reader.internalToken() : "",
            logLevel: try reader.logLevel())
        configuration.limits = try reader.connectionLimits()
        configuration.pinsPerStudent = try reader.positiveInteger("PINS_PER_STUDENT", default: PinCap.defaultPinsPerStudent)
        configuration.mapCacheSize = try reader.positiveInteger("MAP_CACHE_SIZE", default: defaultMapCacheSize)
        configuration.backupStanza = reader["BACKUP_STANZA"]
        configuration.restoreLedger = RestoreLedger.configured(environment)
        return configuration
    }
}
