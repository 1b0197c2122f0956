import Crypto
import OnTheMapShared

/// PKCE between a program and the gateway (RFC 7636): the verifier stays in the program, its challenge
/// travels through the browser, and only the program that holds the verifier can turn the code the browser
/// brings back into a session.
public struct ProofKey: Sendable, Hashable {
    /// 32 random bytes, base64url without padding: 43 characters.
    public let verifier: String
    /// S256: base64url without padding of the verifier's SHA-256, 43 characters.
    public let challenge: String

    public init() {
        var generator = SystemRandomNumberGenerator()
        self.init(verifier: Base64URL.encode((0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }))
    }

    public init(verifier: String) {
        self.verifier = verifier
        challenge = Base64URL.encode(Array(SHA256.hash(data: Array(verifier.utf8))))
    }
}

/// Signing in with the gateway's OpenID Connect provider from a program on the student's machine (RFC 8252):
/// the browser opens `browserSignInURL`, the gateway sends it back to the program's loopback address with a
/// one-time code (`LoopbackRedirect`), and `redeemBrowserSignIn` turns that code into a session.
extension OnTheMapClient {
    /// `GET /v1/auth/oidc/login?cli_redirect=…&cli_challenge=…`: the address to open in the browser.
    /// `redirect` is where the browser comes back: `http://127.0.0.1:PORT/…`.
    public func browserSignInURL(returningTo redirect: String, proof: ProofKey) -> String {
        url("/v1/auth/oidc/login", query: [("cli_redirect", redirect), ("cli_challenge", proof.challenge)])
    }

    /// Whether the gateway signs students in with an OpenID Connect provider. Asked of its token route with
    /// no code, which changes nothing: it is there and wants one (400), or it is not there (404).
    public func offersBrowserSignIn() async throws(OnTheMapError) -> Bool {
        let answer = try await send(.POST, "/v1/auth/oidc/token", body: Self.json([:]))
        switch answer.status {
        case 400: return true
        case 404: return false
        default: throw Self.sessionRouteError(answer)
        }
    }

    /// `POST /v1/auth/oidc/token`: the code the browser brought back, shown with the verifier of the challenge
    /// the sign-in started with, for the session, as `logIn` answers it. A code works once, for two minutes:
    /// an unknown, used or expired one, or another verifier, is `refused`.
    public func redeemBrowserSignIn(code: String, proof: ProofKey) async throws(OnTheMapError) -> Session {
        let body = Self.json(["code": code, "code_verifier": proof.verifier])
        let answer = try await send(.POST, "/v1/auth/oidc/token", body: body, secrets: [code, proof.verifier], redactAnswer: true)
        guard answer.status == 200 else { throw Self.sessionRouteError(answer) }
        return try Self.session(answer)
    }
}
