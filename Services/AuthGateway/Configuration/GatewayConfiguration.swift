import Foundation
import Logging
import OnTheMapShared
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
    /// The tile server the web client draws over its built-in world map (`TILE_URL`); `none` for the world
    /// map alone.
    var tileURL: String
    /// The tiles the gateway serves itself at `/basemap/{z}/{x}/{y}.{ext}` from a PMTiles archive
    /// (`BASEMAP_TILES`, a path); the web client draws these instead of `TILE_URL`'s.
    var basemapTiles: PMTilesArchive?
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
    /// The most of the log's latest events a resumed live stream is sent (`LIVE_RESUME_EVENTS`); a resume
    /// from further back gets `reset`.
    var liveResumeEvents = defaultLiveResumeEvents
    /// The certificate and key to serve HTTPS with (`TLS_CERT`, `TLS_KEY`); plain HTTP without them.
    var tls: TLSCertificates?
    /// How often every live stream gets a comment line, so that proxies keep a quiet one open.
    var liveHeartbeat: Duration = .seconds(15)
    /// Sign-in with an OpenID Connect provider, beside the identity provider's logins (`OIDC_ISSUER`...).
    var oidc: OIDCSettings?
    /// The parent domain the session cookies are scoped to (`SESSION_COOKIE_DOMAIN`); host-only without it.
    var cookieDomain: CookieDomain?
    /// Facebook logins (`facebook_mobile`) checked by the gateway itself (`FACEBOOK_APP_ID`...).
    var facebook: FacebookSettings?
    /// Who may create class maps (`MAP_CREATORS`): every signed-in account when nil.
    var mapCreators: MapCreators?
    /// Class maps whose newest pins this replica keeps to answer at once (`MAP_CACHE_SIZE`), the least
    /// recently read dropped first.
    var mapCacheSize = MapSlug.defaultCacheSize
    /// Where each erasure is recorded once begun (`RESTORE_LEDGER`), for a restore of the database's backups
    /// to erase again; nil: not recorded.
    var restoreLedger: RestoreLedger?

    static let defaultStreamsPerClient = 32
    static let defaultLiveResumeEvents = 10_000

    static let defaultPort = 8080
    static let defaultTileURL = "https://tile.openstreetmap.org/{z}/{x}/{y}.png"
    /// `TILE_URL=none`: no tile server; the web client draws its built-in world map alone.
    static let noTiles = "none"
    /// Debian's `libjs-leaflet`.
    static let defaultLeafletDirectory = "/usr/share/javascript/leaflet"

    /// Reads `DATABASE_URL`, `PORT`, `LOCATIONS_URL`, `INTERNAL_TOKEN`, `IDENTITY_PROVIDER`,
    /// `UDACITY_BASE_URL`, `GEOCODER_URL`, `TILE_URL` (or `none`), `BASEMAP_TILES`, `LEAFLET_DIR`, `SESSION_TTL`, `LOG_LEVEL`, `MAX_CONNECTIONS_PER_CLIENT`,
    /// `MAX_STREAMS_PER_CLIENT`, `LIVE_RESUME_EVENTS`, `TRUSTED_PROXIES`, `TLS_CERT`, `TLS_KEY`, `WRITE_BURST`, `WRITE_INTERVAL`,
    /// `SESSION_COOKIE_DOMAIN`, `MAP_CREATORS`, `MAP_CACHE_SIZE`, and
    /// `OIDC_ISSUER` with `OIDC_CLIENT_ID`, `OIDC_CLIENT_SECRET`, `OIDC_PROVIDER_NAME`, `OIDC_GROUPS_CLAIM` and `PUBLIC_URL`, and
    /// `FACEBOOK_APP_ID` with `FACEBOOK_APP_SECRET` and `FACEBOOK_GRAPH_URL`.
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
        var tiles = reader["TILE_URL"] ?? defaultTileURL
        if tiles.lowercased() == noTiles { tiles = noTiles }
        guard tiles == noTiles || (tiles.contains("{z}") && tiles.contains("{x}") && tiles.contains("{y}") && TileOrigin(tiles) != nil) else {
            throw ConfigurationError("TILE_URL must be an http(s) URL with {z}, {x} and {y}, or none; got \"\(tiles)\"")
        }
        let archive = try reader["BASEMAP_TILES"].map { path throws(ConfigurationError) in
            guard reader["TILE_URL"] == nil else {
                throw ConfigurationError("TILE_URL and BASEMAP_TILES both name the map's tiles: set one of them")
            }
            do throws(PMTiles.Failure) {
                return try PMTilesArchive(path: path)
            } catch {
                throw ConfigurationError("BASEMAP_TILES must be a PMTiles (version 3) archive of image tiles; \(path): \(error.reason)")
            }
        }
        var configuration = GatewayConfiguration(
            database: try reader.database(), port: try reader.port(default: defaultPort),
            locationsURL: locations, internalToken: try reader.internalToken(), identityProvider: provider,
            udacityBaseURL: udacity, geocoderURL: geocoder, tileURL: tiles,
            sessionLifetime: try duration("SESSION_TTL", reader["SESSION_TTL"]) ?? .seconds(30 * 86_400), logLevel: try reader.logLevel())
        configuration.basemapTiles = archive
        configuration.limits = try reader.connectionLimits()
        configuration.leafletDirectory = reader["LEAFLET_DIR"] ?? defaultLeafletDirectory
        configuration.streamsPerClient = try reader.positiveInteger("MAX_STREAMS_PER_CLIENT", default: defaultStreamsPerClient)
        configuration.liveResumeEvents = try reader.positiveInteger("LIVE_RESUME_EVENTS", default: defaultLiveResumeEvents)
        configuration.writeLimit.burst = try reader.positiveInteger("WRITE_BURST", default: configuration.writeLimit.burst)
        configuration.writeLimit.interval = try duration("WRITE_INTERVAL", reader["WRITE_INTERVAL"]) ?? configuration.writeLimit.interval
        configuration.tls = try reader.tlsCertificates()
        configuration.oidc = try OIDCSettings(reader)
        if let domain = reader["SESSION_COOKIE_DOMAIN"] { configuration.cookieDomain = try CookieDomain(setting: domain) }
        configuration.facebook = try FacebookSettings(reader)
        configuration.mapCreators = try reader["MAP_CREATORS"].map { text throws(ConfigurationError) in try MapCreators(setting: text) }
        if configuration.oidc == nil, let group = configuration.mapCreators?.groups.sorted().first {
            throw ConfigurationError(
                "MAP_CREATORS names group:\(group), but groups come from the OpenID Connect provider's ID tokens and OIDC_ISSUER is not set")
        }
        configuration.mapCacheSize = try reader.positiveInteger("MAP_CACHE_SIZE", default: MapSlug.defaultCacheSize)
        configuration.restoreLedger = RestoreLedger.configured(environment)
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

/// An OpenID Connect provider students sign in with: its issuer, the gateway's registration there, and
/// where browsers reach the gateway, which the provider sends them back to.
struct OIDCSettings: Sendable {
    var issuer: String
    var clientID: String
    var clientSecret: String
    /// What the login page's button says: "Log in with <name>".
    var providerName: String
    /// `PUBLIC_URL`, without a trailing slash: what students type to reach the gateway.
    var publicURL: String
    /// The ID token's claim that names the person's groups (`OIDC_GROUPS_CLAIM`), which `MAP_CREATORS`'s
    /// `group:NAME` reads.
    var groupsClaim = defaultGroupsClaim

    static let defaultGroupsClaim = "groups"

    /// Discovery §4: the issuer's path, without a trailing slash, then the well-known name.
    var discoveryURL: String { (issuer.hasSuffix("/") ? String(issuer.dropLast()) : issuer) + "/.well-known/openid-configuration" }

    /// The address to register with the provider as the client's redirect URI.
    var redirectURI: String { publicURL + Self.callbackPath }
    static let callbackPath = "/v1/auth/oidc/callback"

}

extension OIDCSettings {
    /// nil when `OIDC_ISSUER` is unset; with it, the client's id and secret and `PUBLIC_URL` are required.
    init?(_ reader: EnvironmentReader) throws(ConfigurationError) {
        guard let issuer = reader["OIDC_ISSUER"] else {
            guard reader["OIDC_GROUPS_CLAIM"] == nil else {
                throw ConfigurationError("OIDC_GROUPS_CLAIM is set without OIDC_ISSUER: groups come from the OpenID Connect provider's ID tokens")
            }
            return nil
        }
        guard let url = URLComponents(string: issuer), let scheme = url.scheme, let host = url.host, !host.isEmpty,
            scheme == "https" || (scheme == "http" && Self.isLoopback(host)), url.query == nil, url.fragment == nil
        else {
            throw ConfigurationError(
                "OIDC_ISSUER must be the issuer's https URL (http only on loopback), such as https://accounts.google.com; got \"\(issuer)\"")
        }
        let publicText = try reader.required("PUBLIC_URL", example: "https://map.example.edu")
        guard let publicURL = URLComponents(string: publicText), let publicScheme = publicURL.scheme, ["http", "https"].contains(publicScheme),
            publicURL.host?.isEmpty == false, publicURL.path.isEmpty || publicURL.path == "/", publicURL.query == nil
        else {
            throw ConfigurationError(
                "PUBLIC_URL must be the http(s) address students reach the gateway at, such as https://map.example.edu; got \"\(publicText)\"")
        }
        self.init(
            // Kept as given: an issuer is compared with the tokens' `iss` exactly, trailing slash and all.
            issuer: issuer,
            clientID: try reader.required("OIDC_CLIENT_ID", example: "on-the-map"),
            clientSecret: try reader.required("OIDC_CLIENT_SECRET", example: "the secret the provider gave at registration"),
            providerName: reader["OIDC_PROVIDER_NAME"] ?? host,
            publicURL: publicText.hasSuffix("/") ? String(publicText.dropLast()) : publicText,
            groupsClaim: reader["OIDC_GROUPS_CLAIM"] ?? Self.defaultGroupsClaim)
    }

    static func isLoopback(_ host: String) -> Bool { host == "localhost" || host.hasPrefix("127.") || host == "[::1]" || host == "::1" }
}

/// The Facebook app whose users' access tokens the gateway checks itself, with Facebook's Graph API.
struct FacebookSettings: Sendable {
    var appID: String
    /// Makes the app's token (`app_id|app_secret`) the gateway asks Graph with; never logged.
    var appSecret: String
    /// Graph's address, without a trailing slash; it may end in a version (`https://graph.facebook.com/v21.0`).
    var graphURL: String

    static let defaultGraphURL = "https://graph.facebook.com"
}

extension FacebookSettings {
    /// nil when neither `FACEBOOK_APP_ID` nor `FACEBOOK_APP_SECRET` is set; one without the other is a mistake.
    init?(_ reader: EnvironmentReader) throws(ConfigurationError) {
        let (graph, id, secret) = (reader["FACEBOOK_GRAPH_URL"], reader["FACEBOOK_APP_ID"], reader["FACEBOOK_APP_SECRET"])
        guard id != nil || secret != nil else {
            guard graph == nil else {
                throw ConfigurationError("FACEBOOK_GRAPH_URL is set without FACEBOOK_APP_ID and FACEBOOK_APP_SECRET; set all three")
            }
            return nil
        }
        guard let id else {
            throw ConfigurationError("FACEBOOK_APP_ID is not set but FACEBOOK_APP_SECRET is; set both (from the app's Facebook dashboard) or neither")
        }
        guard let secret else {
            throw ConfigurationError("FACEBOOK_APP_SECRET is not set but FACEBOOK_APP_ID is; set both (from the app's Facebook dashboard) or neither")
        }
        guard id.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else {
            throw ConfigurationError("FACEBOOK_APP_ID must be the app's numeric ID, such as 1234567890123456; got \"\(id)\"")
        }
        let graphText = graph ?? Self.defaultGraphURL
        // The app's secret travels in Graph's query: never in the clear, but to a stand-in on loopback.
        guard let url = URLComponents(string: graphText), let scheme = url.scheme, let host = url.host, !host.isEmpty,
            scheme == "https" || (scheme == "http" && OIDCSettings.isLoopback(host)), url.query == nil, url.fragment == nil
        else {
            throw ConfigurationError(
                "FACEBOOK_GRAPH_URL must be Graph's https URL (http only on loopback), such as https://graph.facebook.com; got \"\(graphText)\"")
        }
        self.init(appID: id, appSecret: secret, graphURL: graphText.hasSuffix("/") ? String(graphText.dropLast()) : graphText)
    }
}
