import Foundation
import HTTPTypes
import Hummingbird
import OnTheMapShared
import ServiceKit

/// `POST /v1/accounts`: sign up with the local identity provider. `DELETE /v1/accounts/me`: the signed-in
/// student erased (`Erasures`), whatever their identity provider.
struct AccountsController: Sendable {
    let accounts: any AccountStore
    let provider: any IdentityProvider
    let sessions: Sessions
    let erasures: Erasures
    let cookies: SessionCookies
    let hash: @Sendable (String) async throws -> String

    static let minimumPasswordLength = 8
    static let maximumNameLength = 100
    /// Bytes as well as characters: one character can carry any number of combining marks, and names
    /// travel to the locations service in a header.
    static let maximumNameBytes = 4 * maximumNameLength

    func addRoutes(to group: RouterGroup<GatewayRequestContext>) {
        group.post(use: create)
        group.delete("me", use: erase)
    }

    /// Refused from other sites' pages, and from a page that cannot show it read the XSRF cookie, as a logout
    /// is. Answers `{"erased":{"key":…,"pins":N}}` (200), or `{"erased":{"key":…,"pending":true}}` (202)
    /// when locations-service did not answer and the gateway finishes it later; either way the session is
    /// over and its cookies cleared.
    @Sendable func erase(_ request: Request, context: GatewayRequestContext) async throws -> Response {
        guard !OriginCheck.isCrossSite(request, siteDomain: cookies.domain) else { throw GatewayError.crossOrigin }
        try OriginCheck.requireXSRF(request)
        guard let token = SessionCookies.token(in: request.headers), let account = try await sessions.account(for: token) else {
            throw GatewayError.notLoggedInToErase
        }
        let outcome = try await erasures.erase(account, requestID: context.requestID)
        var json = JSONWriter()
        json.beginObject()
        json.key("erased")
        json.beginObject()
        json.field("key", account.key)
        switch outcome {
        case .erased(let pins): json.field("pins", pins)
        case .pending:
            json.key("pending")
            json.bool(true)
        }
        json.endObject()
        json.endObject()
        var cleared = HTTPFields()
        cookies.clear(on: &cleared, secure: context.isHTTPS)
        return Response.json(json.buffer, status: outcome == .pending ? .accepted : .ok, headers: cleared)
    }

    @Sendable func create(_ request: Request, context: GatewayRequestContext) async throws -> Response {
        guard provider.allowsSignUp else { throw GatewayError.signUpUnavailable }
        let body = try await readJSONBody(request, as: SignUpBody.self)
        let email = EmailAddress(body.email ?? "")
        if let problem = email.problem { throw GatewayError.invalidSignUp(parameter: "email", message: problem) }
        let password = try Self.password(body.password)
        let firstName = try Self.name("firstName", body.firstName)
        let lastName = try Self.name("lastName", body.lastName)
        // Counted once the request is one that would cost a password hash (a taken address too, so the
        // answer cannot be used to test addresses without limit).
        if let address = context.clientAddress, let seconds = try await sessions.throttle.admitSignUp(address: address) {
            throw GatewayError.tooManySignUps(retryAfter: seconds)
        }
        let account: Account
        do {
            account = try await accounts.createLocal(
                email: email, passwordHash: try await hash(password),
                firstName: firstName, lastName: lastName)
        } catch AccountStoreError.emailTaken {
            throw GatewayError.emailTaken
        }
        var json = JSONWriter()
        json.beginObject()
        SessionWire.writeAccount(account, to: &json)
        json.endObject()
        return Response.json(json.buffer, status: .created)
    }

    static func password(_ value: String?) throws(GatewayError) -> String {
        // Characters as JSON Schema counts them (code points), as the published document says.
        guard let password = value, password.unicodeScalars.count >= minimumPasswordLength else {
            throw .invalidSignUp(parameter: "password", message: "password must be at least \(minimumPasswordLength) characters.")
        }
        // bcrypt reads a password up to its first NUL: the rest would not count.
        guard !password.unicodeScalars.contains("\u{0}") else {
            throw .invalidSignUp(parameter: "password", message: "password must not contain a NUL character.")
        }
        // bcrypt would silently ignore the rest, so a longer password would not be what protects the account.
        let limit = LocalIdentityProvider.maximumPasswordBytes
        guard password.utf8.count <= limit else {
            throw .invalidSignUp(parameter: "password", message: "password must be at most \(limit) bytes (UTF-8); only that many would count.")
        }
        return password
    }

    static func name(_ parameter: String, _ value: String?) throws(GatewayError) -> String {
        guard let name = value?.trimmingCharacters(in: .whitespacesAndNewlines), !name.isEmpty else {
            throw .invalidSignUp(parameter: parameter, message: "\(parameter) is required.")
        }
        guard !name.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
            throw .invalidSignUp(parameter: parameter, message: "\(parameter) must not contain control characters.")
        }
        guard name.count <= maximumNameLength, name.utf8.count <= maximumNameBytes else {
            throw .invalidSignUp(parameter: parameter, message: "\(parameter) must be at most \(maximumNameLength) characters.")
        }
        return name
    }
}
