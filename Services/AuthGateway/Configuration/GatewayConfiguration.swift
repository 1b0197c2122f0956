import Foundation
import Logging
import ServiceKit

/// Everything the gateway reads from its environment, checked once at start-up.
struct GatewayConfiguration: Sendable {
    enum IdentityProviderKind: String, Sendable {
        case local
        case udacity
    }

    var database: DatabaseURL
    var host = "0.0.0.0"
    var port: Int
    var locationsURL: InternalHTTPClient.Endpoint
    var internalToken: String
    var identityProvider: IdentityProviderKind
    var udacityBaseURL: String?
    var geocoderURL: String?
    var tileURL: String
    /// Where Leaflet's files are (`LEAFLET_DIR`); the web client's map needs `leaflet.js` and `leaflet.css`.
    var leafletDirectory = defaultLeafletDirectory
    var sessionLifetime: Duration
    var logLevel: Logger.Level
    /// How long the Udacity API and the geocoder may take before the user is told they timed out.
    var upstreamTimeout: Duration = .seconds(5)
    /// bcrypt cost for new local passwords; lower only in tests.
    var passwordCost: UInt8 = 11
    var throttle = LoginThrottle.Policy()
    /// Writes each account and each client address may make at once, then one per interval (`WRITE_BURST`,
    /// `WRITE_INTERVAL`).
    var writeLimit = WriteLimit.Policy()
    /// Timeouts and per-address caps on connections; `MAX_CONNECTIONS_PER_CLIENT`, `TRUSTED_PROXIES`.
    var limits = ConnectionLimits()
    /// Live streams open at once from one client address (`MAX_STREAMS_PER_CLIENT`).
    var streamsPerClient = defaultStreamsPerClient
    /// The certificate and key to serve HTTPS with (`TLS_CERT`, `TLS_KEY`); plain HTTP without them.
    var tls: TLSCertificates?
    /// How often every live stream gets a comment line, so that proxies keep a quiet one open.
    var liveHeartbeat: Duration = .seconds(15)

    static let defaultStreamsPerClient = 32

    static let defaultPort = 8080
    static let defaultTileURL = "https://tile.openstreetmap.org/{z}/{x}/{y}.png"
    /// Debian's `libjs-leaflet`.
    static let defaultLeafletDirectory = "/usr/share/javascript/leaflet"

    /// Reads `DATABASE_URL`, `PORT`, `LOCATIONS_URL`, `INTERNAL_TOKEN`, `IDENTITY_PROVIDER`,
    /// `UDACITY_BASE_URL`, `GEOCODER_URL`, `TILE_URL`, `LEAFLET_DIR`, `SESSION_TTL`, `LOG_LEVEL`, `MAX_CONNECTIONS_PER_CLIENT`,
    /// `MAX_STREAMS_PER_CLIENT`, `TRUSTED_PROXIES`, `TLS_CERT`, `TLS_KEY`, `WRITE_BURST` and `WRITE_INTERVAL`.
    static func fromEnvironment(_ environment: [String: String]) throws(ConfigurationError) -> GatewayConfiguration {
        let reader = EnvironmentReader(environment)
        let locationsText = try reader.required("LOCATIONS_URL", example: "http://127.0.0.1:8081")
        // The hop to locations-service stays inside the deployment: plain HTTP, no TLS.
        guard let locations = InternalHTTPClient.Endpoint(url: locationsText) else {
            throw ConfigurationError("LOCATIONS_URL must be a plain http URL such as http://127.0.0.1:8081, got \"\(locationsText)\"")
        }
        let providerText = reader["IDENTITY_PROVIDER"] ?? "local"
        guard let provider = IdentityProviderKind(rawValue: providerText.lowercased()) else {
            throw ConfigurationError("IDENTITY_PROVIDER must be local or udacity, got \"\(providerText)\"")
        }
        var udacity: String?
        if provider == .udacity {
            udacity = try httpURL(reader.required("UDACITY_BASE_URL", example: "https://onthemap-api.udacity.com/v1"), name: "UDACITY_BASE_URL")
        }
        var geocoder: String?
        if let text = reader["GEOCODER_URL"] { geocoder = try httpURL(text, name: "GEOCODER_URL") }
        let tiles = reader["TILE_URL"] ?? defaultTileURL
        guard tiles.contains("{z}"), tiles.contains("{x}"), tiles.contains("{y}"), TileOrigin(tiles) != nil else {
            throw ConfigurationError("TILE_URL must be an http(s) URL with {z}, {x} and {y}, got \"\(tiles)\"")
        }
        var configuration = GatewayConfiguration(
            database: try reader.database(), port: try reader.port(default: defaultPort),
            locationsURL: locations, internalToken: try reader.internalToken(), identityProvider: provider,
            udacityBaseURL: udacity, geocoderURL: geocoder, tileURL: tiles,
            sessionLifetime: try duration("SESSION_TTL", reader["SESSION_TTL"]) ?? .seconds(30 * 86_400), logLevel: try reader.logLevel())
        configuration.limits = try reader.connectionLimits()
        configuration.leafletDirectory = reader["LEAFLET_DIR"] ?? defaultLeafletDirectory
        configuration.streamsPerClient = try reader.positiveInteger("MAX_STREAMS_PER_CLIENT", default: defaultStreamsPerClient)
        configuration.writeLimit.burst = try reader.positiveInteger("WRITE_BURST", default: configuration.writeLimit.burst)
        configuration.writeLimit.interval = try duration("WRITE_INTERVAL", reader["WRITE_INTERVAL"]) ?? configuration.writeLimit.interval
        configuration.tls = try reader.tlsCertificates()
        return configuration
    }

    /// A duration such as `SESSION_TTL` or `WRITE_INTERVAL`: seconds, or a number with `s`, `m`, `h` or `d`;
    /// nil when unset.
    static func duration(_ name: String, _ text: String?) throws(ConfigurationError) -> Duration? {
        guard let text else { return nil }
        let units: [Character: Int64] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
        var digits = Substring(text)
        var unit: Int64 = 1
        if let last = text.last, let factor = units[last] {
            unit = factor
            digits = text.dropLast()
        }
        guard let value = Int64(digits), value > 0 else {
            throw ConfigurationError("\(name) must be a positive duration such as 3600, 90m, 12h or 30d; got \"\(text)\"")
        }
        return .seconds(value * unit)
    }

    private static func httpURL(_ text: String, name: String) throws(ConfigurationError) -> String {
        guard let url = URLComponents(string: text), let scheme = url.scheme, ["http", "https"].contains(scheme),
            url.host?.isEmpty == false
        else { throw ConfigurationError("\(name) must be an http(s) URL, got \"\(text)\"") }
        return text.hasSuffix("/") ? String(text.dropLast()) : text
    }
}
