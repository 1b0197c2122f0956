import Foundation
import Hummingbird
import OnTheMapShared
import ServiceKit

/// `POST /v1/accounts`: sign up with the local identity provider.
struct AccountsController: Sendable {
    let accounts: AccountStore
    let provider: any IdentityProvider
    let hash: @Sendable (String) async throws -> String

    static let minimumPasswordLength = 8
    static let maximumNameLength = 100

    func addRoutes(to group: RouterGroup<GatewayRequestContext>) {
        group.post(use: create)
    }

    @Sendable func create(_ request: Request, context: GatewayRequestContext) async throws -> Response {
        guard provider.allowsSignUp else { throw GatewayError.signUpUnavailable }
        let body = try await readJSONObject(request, limit: SessionController.maximumBodySize)
        func text(_ name: String) throws(GatewayError) -> String {
            guard let value = (body[name] as? String)?.trimmingCharacters(in: .whitespacesAndNewlines), !value.isEmpty else {
                throw .invalidSignUp(parameter: name, message: "\(name) is required.")
            }
            guard !value.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
                throw .invalidSignUp(parameter: name, message: "\(name) must not contain control characters.")
            }
            return value
        }
        let email = try text("email")
        guard let password = body["password"] as? String, password.count >= Self.minimumPasswordLength, !password.contains("\u{0}") else {
            throw GatewayError.invalidSignUp(parameter: "password", message: "password must be at least \(Self.minimumPasswordLength) characters.")
        }
        let firstName = try text("firstName")
        let lastName = try text("lastName")
        let parts = email.split(separator: "@")
        guard parts.count == 2, parts[1].contains("."), !email.contains(where: \.isWhitespace), email.utf8.count <= 254 else {
            throw GatewayError.invalidSignUp(parameter: "email", message: "email must be an address such as student@example.com.")
        }
        for (name, value) in [("firstName", firstName), ("lastName", lastName)] where value.count > Self.maximumNameLength {
            throw GatewayError.invalidSignUp(parameter: name, message: "\(name) must be at most \(Self.maximumNameLength) characters.")
        }
        let account: Account
        do {
            account = try await accounts.createLocal(email: email, passwordHash: try await hash(password),
                                                     firstName: firstName, lastName: lastName)
        } catch AccountStore.StoreError.emailTaken {
            throw GatewayError.emailTaken
        }
        var json = JSONWriter()
        json.beginObject()
        SessionController.writeAccount(account, to: &json)
        json.endObject()
        return Response.json(json.bytes, status: .created)
    }
}
