import Foundation
import HTTPTypes
import Hummingbird
import OnTheMapShared
import ServiceKit

/// OpenID Connect sign-in, under `/v1/auth/oidc`: `GET login` sends the browser to the provider, `GET callback`
/// is where the provider sends it back, and `POST token` turns a command-line sign-in's code into its
/// session. Browser-facing refusals are pages; `token`'s are the session routes' JSON. Without a provider
/// (`signIn` nil) the routes are there and say so, 404, as every method they do not take is 405.
struct SignInController: Sendable {
    let signIn: OIDCSignIn?
    let lifetime: Duration
    /// The state cookie goes where the session cookies go: the provider may send the browser back to another
    /// of the gateway's names.
    let cookies: SessionCookies

    /// The cookie holding a sign-in's state while the browser is at the provider: the callback finishes only
    /// the sign-in this browser started.
    static let stateCookie = "onthemap_signin"
    static let path = "/v1/auth/oidc"

    func addRoutes(pages: RouterGroup<GatewayRequestContext>, api: RouterGroup<GatewayRequestContext>) {
        pages.get("login", use: login)
        pages.get("callback", use: callback)
        api.post("token", use: token)
    }

    /// `?cli_redirect=http://127.0.0.1:PORT/…&cli_challenge=…` when the command line started it.
    @Sendable func login(_ request: Request, context: GatewayRequestContext) async throws -> Response {
        guard let signIn else { throw GatewayError.signInNotConfigured }
        let query = Self.formQuery(request)
        var commandLine: CommandLineReturn?
        if query["cli_redirect"] != nil || query["cli_challenge"] != nil {
            guard let redirect = query["cli_redirect"], Self.isLoopbackRedirect(redirect) else {
                throw GatewayError.invalidQuery("cli_redirect must be an http://127.0.0.1:PORT/ address of the command that signs in.")
            }
            guard let challenge = query["cli_challenge"], Self.isChallenge(challenge) else {
                throw GatewayError.invalidQuery("cli_challenge must be the 43-character base64url SHA-256 of the command's verifier.")
            }
            commandLine = CommandLineReturn(redirect: redirect, challenge: challenge)
        }
        let started = try await signIn.start(commandLine: commandLine)
        var headers: HTTPFields = [.location: started.authorizationURL, .cacheControl: "no-store"]
        headers[values: .setCookie].append(
            signInStateCookie(started.state, maxAge: Int(OIDCSignIn.signInLifetime.components.seconds), secure: context.isHTTPS))
        return Response(status: .seeOther, headers: headers)
    }

    @Sendable func callback(_ request: Request, context: GatewayRequestContext) async throws -> Response {
        guard let signIn else { throw GatewayError.signInNotConfigured }
        let query = Self.formQuery(request)
        guard let state = query["state"], !state.isEmpty else { throw GatewayError.missingParameter("state") }
        let answer: OIDCSignIn.Callback
        if let code = query["code"], !code.isEmpty {
            answer = .code(code)
        } else if let error = query["error"] {
            answer = .refused(error: error, description: query["error_description"])
        } else {
            throw GatewayError.missingParameter("code")
        }
        let finished = try await signIn.finish(state: state, answer: answer, cookieState: request.cookies[Self.stateCookie]?.value)
        var headers: HTTPFields = [.cacheControl: "no-store"]
        headers[values: .setCookie].append(signInStateCookie("", maxAge: 0, secure: context.isHTTPS))
        switch finished {
        case .session(let opened):
            cookies.set(
                on: &headers, token: opened.token, xsrf: SessionToken.generate().rawValue, maxAge: Int(lifetime.components.seconds),
                secure: context.isHTTPS)
            headers[.location] = "/"
        case .commandLine(let redirect):
            headers[.location] = redirect
        }
        return Response(status: .seeOther, headers: headers)
    }

    /// `{"code": …, "code_verifier": …}`: answered as a login is.
    @Sendable func token(_ request: Request, context: GatewayRequestContext) async throws -> Response {
        guard let signIn else { throw GatewayError.signInNotConfigured }
        let body = try await readJSONBody(request, as: HandoffBody.self)
        guard let code = body.code, !code.isEmpty else { throw GatewayError.missingParameter("code") }
        guard let verifier = body.codeVerifier, !verifier.isEmpty else { throw GatewayError.missingParameter("code_verifier") }
        let opened = try await signIn.redeem(code: code, verifier: verifier)
        return SessionController.opened(opened, lifetime: lifetime, cookies: cookies, secure: context.isHTTPS)
    }

    struct HandoffBody: Decodable {
        enum CodingKeys: String, CodingKey {
            case code
            case codeVerifier = "code_verifier"
        }
        var code: String?
        var codeVerifier: String?

        init(from decoder: any Decoder) throws {
            let fields = try decoder.container(keyedBy: CodingKeys.self)
            code = fields.stringIfPresent(.code)
            codeVerifier = fields.stringIfPresent(.codeVerifier)
        }
    }

    /// The query as a form encodes it (RFC 6749 §4.1.2 says the provider's answer is one): `+` is a space.
    /// The first value of each name.
    static func formQuery(_ request: Request) -> [String: String] {
        var values: [String: String] = [:]
        for pair in (request.uri.query ?? "").split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let decode = { (text: Substring) in text.replacingOccurrences(of: "+", with: " ").removingPercentEncoding }
            guard let name = decode(parts[0]), let value = decode(parts.count > 1 ? parts[1] : ""), values[name] == nil else { continue }
            values[name] = value
        }
        return values
    }

    private func signInStateCookie(_ value: String, maxAge: Int, secure: Bool) -> String {
        cookies.cookie(Self.stateCookie, value, maxAge: maxAge, path: Self.path, httpOnly: true, secure: secure)
    }

    /// RFC 8252 §7.3: plain http to a loopback address, any port, never a name another host could answer to.
    static func isLoopbackRedirect(_ text: String) -> Bool {
        guard text.utf8.count <= 512, let url = URLComponents(string: text), url.scheme == "http", url.user == nil, url.password == nil,
            url.fragment == nil, url.port != nil, let host = url.host
        else { return false }
        return host == "127.0.0.1" || host == "[::1]" || host == "::1" || host == "localhost"
    }

    static func isChallenge(_ text: String) -> Bool {
        text.utf8.count == 43 && Base64URL.decode(text)?.count == 32
    }
}
