import Foundation
import HTTPTypes
import Hummingbird
import OnTheMapShared

/// `POST` and `DELETE /v1/session` (and `/api/session`), answering exactly as Udacity's session API did.
struct SessionController: Sendable {
    let sessions: Sessions
    let lifetime: Duration
    let cookies: SessionCookies

    func addRoutes(to group: RouterGroup<GatewayRequestContext>) {
        group.post(use: login)
        group.delete(use: logout)
    }

    @Sendable func login(_ request: Request, context: GatewayRequestContext) async throws -> Response {
        let credential = try Self.credential(try await readJSONBody(request, as: LoginBody.self))
        let opened = try await sessions.login(credential, address: context.clientAddress)
        return Self.opened(opened, lifetime: lifetime, cookies: cookies, secure: context.isHTTPS)
    }

    /// A new session's answer, as Udacity's was, with its cookies.
    static func opened(_ opened: Sessions.Opened, lifetime: Duration, cookies: SessionCookies, secure: Bool) -> Response {
        var json = JSONWriter()
        json.beginObject()
        SessionWire.writeAccount(opened.account, to: &json)
        json.key("session")
        json.beginObject()
        json.field("id", opened.token.rawValue)
        json.field("expiration", opened.expiresAt.iso8601Microseconds)
        json.endObject()
        json.endObject()
        var headers = HTTPFields()
        cookies.set(
            on: &headers, token: opened.token, xsrf: SessionToken.generate().rawValue,
            maxAge: Int(lifetime.components.seconds), secure: secure)
        return SessionWire.response(json.buffer, headers: headers)
    }

    @Sendable func logout(_ request: Request, context: GatewayRequestContext) async throws -> Response {
        try OriginCheck.requireXSRF(request)
        let token = SessionCookies.token(in: request.headers)
        if let token { try await sessions.logout(token) }
        var json = JSONWriter()
        json.beginObject()
        json.key("session")
        json.beginObject()
        json.field("id", token?.rawValue ?? "")
        json.field("expiration", Timestamp.now().iso8601Microseconds)
        json.endObject()
        json.endObject()
        var headers = HTTPFields()
        cookies.clear(on: &headers, secure: context.isHTTPS)
        return SessionWire.response(json.buffer, headers: headers)
    }

    /// `{"udacity": {"username": …, "password": …}}` or `{"facebook_mobile": {"access_token": …}}`.
    static func credential(_ body: LoginBody) throws(GatewayError) -> Credential {
        guard body.kinds.count == 1 else { throw .notExactlyOneCredential }
        if body.kinds == [.facebookMobile] {
            guard let token = body.facebookAccessToken, !token.isEmpty else { throw .missingParameter("facebook_mobile.access_token") }
            // Facebook's tokens are a few hundred bytes of letters and digits.
            guard token.utf8.count <= LoginBody.maximumAccessTokenBytes else {
                throw .tooLong(parameter: "facebook_mobile.access_token", limit: LoginBody.maximumAccessTokenBytes)
            }
            return .facebook(accessToken: token)
        }
        guard let username = body.udacity?.username, !username.isEmpty else { throw .missingParameter("udacity.username") }
        guard let password = body.udacity?.password, !password.isEmpty else { throw .missingParameter("udacity.password") }
        // PostgreSQL text cannot hold NUL, and no account has it in its name or password.
        guard !username.contains("\u{0}"), !password.contains("\u{0}") else { throw .invalidCredentials }
        let email = EmailAddress(username)
        // No address is longer, and nothing longer is worth a lookup or a row in the throttle's table.
        guard email.text.utf8.count <= EmailAddress.maximumBytes else {
            throw .tooLong(parameter: "udacity.username", limit: EmailAddress.maximumBytes)
        }
        return .password(username: email, password: password)
    }
}
