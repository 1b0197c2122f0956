import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import OnTheMapShared
import Synchronization

/// The gateway's view of one OpenID Connect issuer: its discovery document and its signing keys, each
/// fetched when first needed and kept (the keys fetched again when a token names one not yet seen: the
/// issuer rotated them), and the exchange of an authorization code for an ID token at its token endpoint.
final class OIDCIssuer: Sendable {
    let settings: OIDCSettings
    private let httpClient: HTTPClient
    private let timeout: TimeAmount
    private let logger: Logger
    private let cache = Mutex(Cache())

    private struct Cache {
        var discovery: Discovery?
        var keys: OIDCKeySet?
        var keysFetchedAt: ContinuousClock.Instant?
    }

    /// The least time between two fetches of the keys, so that tokens naming unknown keys cannot make the
    /// gateway fetch them again and again: a fetch sooner waits for it.
    static let keyRefetchInterval = Duration.seconds(1)

    /// The fields of the discovery document the gateway uses (OpenID Connect Discovery 1.0 §3).
    struct Discovery: Decodable, Sendable {
        enum CodingKeys: String, CodingKey {
            case issuer
            case authorizationEndpoint = "authorization_endpoint"
            case tokenEndpoint = "token_endpoint"
            case jwksURI = "jwks_uri"
            case signingAlgorithms = "id_token_signing_alg_values_supported"
            case tokenEndpointAuthMethods = "token_endpoint_auth_methods_supported"
        }
        var issuer: String
        var authorizationEndpoint: String
        var tokenEndpoint: String
        var jwksURI: String
        var signingAlgorithms: [String]?
        var tokenEndpointAuthMethods: [String]?
    }

    init(settings: OIDCSettings, httpClient: HTTPClient, timeout: TimeAmount, logger: Logger) {
        self.settings = settings
        self.httpClient = httpClient
        self.timeout = timeout
        self.logger = logger
    }

    func discovery() async throws(GatewayError) -> Discovery {
        if let known = cache.withLock({ $0.discovery }) { return known }
        let (status, body) = try await call(HTTPClientRequest(url: settings.discoveryURL))
        guard status == 200, let found = try? JSONDecoder().decode(Discovery.self, from: Data(body.readableBytesView)) else {
            logger.warning("the OpenID Connect issuer's discovery document could not be read", metadata: ["status": "\(status)"])
            throw .identityUnavailable
        }
        // Discovery §4.3: the document must name the issuer it was fetched from, or its keys vouch for someone else.
        guard found.issuer == settings.issuer else {
            logger.error(
                "the OpenID Connect discovery document names another issuer; check OIDC_ISSUER",
                metadata: ["configured": "\(settings.issuer)", "announced": "\(found.issuer)"])
            throw .identityUnavailable
        }
        cache.withLock { $0.discovery = found }
        return found
    }

    /// The issuer's keys, fetched again first when `keyID` is not among them.
    func keys(naming keyID: String?) async throws(GatewayError) -> OIDCKeySet {
        let now = ContinuousClock.now
        let (known, fetchedAt) = cache.withLock { ($0.keys, $0.keysFetchedAt) }
        if let known, keyID.map(known.identifiers.contains) ?? true { return known }
        // A token naming a key not seen yet: the issuer rotated its keys. Fetched at most once an interval.
        if let fetchedAt, now - fetchedAt < Self.keyRefetchInterval {
            try? await Task.sleep(until: fetchedAt + Self.keyRefetchInterval, clock: .continuous)
        }
        let (status, body) = try await call(HTTPClientRequest(url: try await discovery().jwksURI))
        guard status == 200, let fetched = await OIDCKeySet.from(jwks: Data(body.readableBytesView)) else {
            logger.warning("the OpenID Connect issuer's keys could not be read", metadata: ["status": "\(status)"])
            throw .identityUnavailable
        }
        if let known, known.identifiers != fetched.identifiers {
            logger.info("the OpenID Connect issuer's keys changed", metadata: ["keys": "\(fetched.identifiers.sorted())"])
        }
        cache.withLock {
            $0.keys = fetched
            $0.keysFetchedAt = now
        }
        return fetched
    }

    /// The ID token the token endpoint gives for this code (OpenID Connect Core §3.1.3), with the PKCE verifier.
    func idToken(code: String, verifier: String) async throws(GatewayError) -> String {
        let discovery = try await discovery()
        var form: [(String, String)] = [
            ("grant_type", "authorization_code"), ("code", code), ("redirect_uri", settings.redirectURI), ("code_verifier", verifier),
        ]
        var request = HTTPClientRequest(url: discovery.tokenEndpoint)
        request.method = .POST
        request.headers.add(name: "Accept", value: "application/json")
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        // client_secret_basic is the default when the issuer names no method (Discovery §3).
        let methods = discovery.tokenEndpointAuthMethods ?? ["client_secret_basic"]
        if methods.contains("client_secret_basic") || !methods.contains("client_secret_post") {
            let pair = PercentEncoding.component(settings.clientID) + ":" + PercentEncoding.component(settings.clientSecret)
            request.headers.add(name: "Authorization", value: "Basic " + Data(pair.utf8).base64EncodedString())
        } else {
            form += [("client_id", settings.clientID), ("client_secret", settings.clientSecret)]
        }
        request.body = .bytes(ByteBuffer(string: PercentEncoding.query(form)))
        let (status, body) = try await call(request)
        let answer = try? JSONDecoder().decode(TokenAnswer.self, from: Data(body.readableBytesView))
        switch status {
        case 200:
            guard let token = answer?.idToken else { throw .signInRefused("its token endpoint gave no ID token") }
            return token
        case 400, 401:
            // RFC 6749 §5.2: invalid_grant is a code used already, expired, or not this client's.
            logger.info("the OpenID Connect issuer refused a code", metadata: ["error": "\(answer?.error ?? "-")"])
            if answer?.error == "invalid_client" {
                logger.error("the OpenID Connect issuer refused the gateway's client credentials; check OIDC_CLIENT_ID and OIDC_CLIENT_SECRET")
                throw .identityUnavailable
            }
            throw .signInRefused("it did not accept the sign-in's code (\(answer?.error ?? "refused"); a code works once)")
        default:
            logger.warning("the OpenID Connect token endpoint failed", metadata: ["status": "\(status)"])
            throw .identityUnavailable
        }
    }

    private struct TokenAnswer: Decodable {
        enum CodingKeys: String, CodingKey {
            case idToken = "id_token"
            case error
        }
        var idToken: String?
        var error: String?
    }

    private func call(_ request: HTTPClientRequest) async throws(GatewayError) -> (status: Int, body: ByteBuffer) {
        do {
            return try await IdentityUpstream.call(request, on: httpClient, timeout: timeout, naming: "The OpenID Connect issuer", logger: logger)
        } catch .upstreamTimedOut {
            throw .identityTimedOut
        } catch {
            throw .identityUnavailable
        }
    }
}
