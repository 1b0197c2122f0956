import Crypto
import Foundation
import Logging
import OnTheMapShared
import ServiceKit

/// Signing in with an OpenID Connect provider: the authorization code flow with PKCE, `state` and `nonce`
/// (OpenID Connect Core §3.1). A sign-in is started here, sent to the provider, and finished when the
/// browser comes back with a code: the code becomes an ID token at the provider's token endpoint, the token
/// is verified, and its subject's account gets a session like any login's. From the command line, the
/// browser is sent back to the command instead, with a code of ours the command turns into its session by
/// showing the verifier of the challenge it started with (RFC 8252's loopback redirect, PKCE again).
struct OIDCSignIn: Sendable {
    let issuer: OIDCIssuer
    let store: any SignInStore
    let accounts: any AccountStore
    let sessions: Sessions
    let clock: any WallClock
    let logger: Logger

    /// How long a student may take at the provider's login page.
    static let signInLifetime = Duration.seconds(10 * 60)
    /// How long the command line has to show its code once the browser brought it.
    static let handoffLifetime = Duration.seconds(2 * 60)

    struct Started: Sendable {
        /// The secret the browser keeps in a cookie and the provider hands back: the sign-in's key.
        let state: String
        /// Where the browser is sent: the provider's authorization endpoint with the request.
        let authorizationURL: String
    }

    enum Finished: Sendable {
        /// A browser sign-in: the session to set in the browser.
        case session(Sessions.Opened)
        /// A command-line sign-in: where to send the browser, with the code for the command.
        case commandLine(redirect: String)
    }

    func start(commandLine: CommandLineReturn?) async throws -> Started {
        let discovery = try await issuer.discovery()
        let state = Self.secret()
        let nonce = Self.secret()
        let verifier = Self.secret()
        let now = clock.now
        try await store.begin(
            PendingSignIn(nonce: nonce, codeVerifier: verifier, commandLine: commandLine, expiresAt: now.adding(Self.signInLifetime)),
            stateHash: Self.hash(state), at: now)
        let settings = issuer.settings
        let query = [
            ("response_type", "code"), ("client_id", settings.clientID), ("redirect_uri", settings.redirectURI),
            ("scope", "openid profile email"), ("state", state), ("nonce", nonce),
            ("code_challenge", Self.challenge(of: verifier)), ("code_challenge_method", "S256"),
        ]
        return Started(state: state, authorizationURL: Self.adding(query, to: discovery.authorizationEndpoint))
    }

    /// What the browser brought back from the provider besides the state (OAuth 2.0, RFC 6749 §4.1.2).
    enum Callback: Sendable {
        case code(String)
        /// The provider's `error` (`access_denied`: the student said no) and its `error_description`.
        case refused(error: String, description: String?)
    }

    /// The browser came back with `state`; `cookieState` is the state its cookie holds. A command-line
    /// sign-in that fails once found is sent back to the command with the reason as `error`, so the command
    /// can say it.
    func finish(state: String, answer: Callback, cookieState: String?) async throws -> Finished {
        // The state must be this browser's own: a sign-in someone else started cannot be finished here (and
        // log this browser in to their account).
        guard let cookieState, cookieState == state else { throw GatewayError.signInNotStartedHere }
        guard let pending = try await store.take(stateHash: Self.hash(state), at: clock.now) else { throw GatewayError.signInUnknown }
        do {
            let account = try await signedIn(answer, pending: pending)
            guard let commandLine = pending.commandLine else { return .session(try await sessions.open(for: account)) }
            let handoff = Self.secret()
            let now = clock.now
            try await store.beginHandoff(
                PendingHandoff(accountKey: account.key, challenge: commandLine.challenge), codeHash: Self.hash(handoff),
                expiresAt: now.adding(Self.handoffLifetime), at: now)
            return .commandLine(redirect: Self.adding([("code", handoff)], to: commandLine.redirect))
        } catch let error as GatewayError {
            guard let commandLine = pending.commandLine else { throw error }
            return .commandLine(redirect: Self.adding([("error", error.message)], to: commandLine.redirect))
        }
    }

    /// The account the provider's answer vouches for: the code exchanged for an ID token, the token
    /// verified, its subject's account found or created, with the names, address and groups it gives.
    private func signedIn(_ answer: Callback, pending: PendingSignIn) async throws -> Account {
        let code: String
        switch answer {
        case .code(let given): code = given
        case .refused(let error, let description):
            logger.info("the OpenID Connect provider refused a sign-in", metadata: ["error": "\(error)"])
            throw GatewayError.signInRefused("it answered \(error)" + (description.map { " (\($0))" } ?? ""))
        }
        let token = try await issuer.idToken(code: code, verifier: pending.codeVerifier)
        let claims = try await verified(token, nonce: pending.nonce)
        let names = claims.names
        let account = try await accounts.signedIn(
            ExternalIdentity(
                provider: "oidc", issuer: issuer.settings.issuer, subject: claims.subject.value, email: claims.email ?? "", firstName: names.first,
                lastName: names.last, groups: claims.groups))
        logger.info("signed in with OpenID Connect", metadata: ["account": "\(account.key)", "groups": "\(account.groups.count)"])
        return account
    }

    private static func adding(_ pairs: [(String, String)], to url: String) -> String {
        url + (url.contains("?") ? "&" : "?") + PercentEncoding.query(pairs)
    }

    /// The command line shows the code its browser brought and the verifier of its challenge: a session.
    func redeem(code: String, verifier: String) async throws -> Sessions.Opened {
        guard let handoff = try await store.takeHandoff(codeHash: Self.hash(code), at: clock.now),
            Self.challenge(of: verifier) == handoff.challenge
        else { throw GatewayError.signInCodeRefused }
        guard let account = try await accounts.account(key: handoff.accountKey) else { throw GatewayError.signInCodeRefused }
        return try await sessions.open(for: account)
    }

    /// The ID token's claims once verified against the issuer's keys, fetched again if it names a new one.
    private func verified(_ token: String, nonce: String) async throws -> IDTokenClaims {
        let discovery = try await issuer.discovery()
        let verifier = IDTokenVerifier(
            issuer: issuer.settings.issuer, clientID: issuer.settings.clientID,
            algorithms: Set(discovery.signingAlgorithms ?? ["RS256"]), groupsClaim: issuer.settings.groupsClaim)
        do {
            let keys = try await issuer.keys(naming: try IDTokenVerifier.header(of: token).kid)
            return try await verifier.claims(of: token, keys: keys, nonce: nonce, now: clock.now.date)
        } catch let refusal as IDTokenVerifier.Refusal {
            logger.warning("an OpenID Connect ID token was refused", metadata: ["reason": "\(refusal)"])
            if case .groups = refusal { throw GatewayError.signInGroupsRefused(refusal.description) }
            throw GatewayError.signInRefused(refusal.description)
        }
    }

    /// 256 random bits, base64url: a state, a nonce, a PKCE verifier (43 characters, RFC 7636 §4.1) or a code.
    static func secret() -> String {
        var generator = SystemRandomNumberGenerator()
        return Base64URL.encode((0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
    }

    /// RFC 7636 §4.2's S256: base64url of the verifier's SHA-256.
    static func challenge(of verifier: String) -> String { Base64URL.encode(Array(SHA256.hash(data: Array(verifier.utf8)))) }

    static func hash(_ secret: String) -> [UInt8] { Array(SHA256.hash(data: Array(secret.utf8))) }
}
