import Hummingbird
import OnTheMapShared

/// `GET /v1/users/{key}` (and `/api/users/{key|me}`): the profile document Udacity's clients decode,
/// unwrapped at the top level and again under `"user"` for older clients.
struct UsersController: Sendable {
    let accounts: any AccountStore
    let sessions: Sessions

    func addRoutes(to group: RouterGroup<GatewayRequestContext>) {
        group.get(":key", use: show)
    }

    @Sendable func show(_ request: Request, context: GatewayRequestContext) async throws -> Response {
        let key = try context.parameters.require("key")
        // Keys and session ids are well under 128 bytes: anything longer names nobody, and is not looked up.
        guard key.utf8.count <= Self.maximumKeyLength else { throw GatewayError.userNotFound }
        let requester = try await SessionCookies.token(in: request.headers).asyncMap { try await sessions.account(for: $0) } ?? nil
        let account: Account?
        if key == "me" {
            account = requester
        } else if let found = try await accounts.account(key: key) {
            account = found
        } else {
            // Some clients ask for /users/<session id> instead of the account key.
            account = try await sessions.account(for: SessionToken(key))
        }
        guard let account else { throw GatewayError.userNotFound }
        return SessionWire.response(Self.document(account, showEmail: requester?.key == account.key))
    }

    static let maximumKeyLength = 128

    /// Every field strict clients require, empty where we have nothing; the email only to its owner.
    static func document(_ account: Account, showEmail: Bool) -> ByteBuffer {
        func fields(_ json: inout JSONWriter) {
            json.field("first_name", account.firstName)
            json.field("last_name", account.lastName)
            json.field("key", account.key)
            json.field("nickname", account.firstName)
            json.key("email")
            json.beginObject()
            json.field("address", showEmail ? account.email : "")
            json.key("_verified")
            json.bool(account.provider != "local")
            json.key("_verification_code_sent")
            json.bool(false)
            json.endObject()
            for flag in [("_registered", true), ("_has_password", account.provider == "local"), ("employer_sharing", false)] {
                json.key(flag.0)
                json.bool(flag.1)
            }
            for list in [
                "social_accounts", "_cohort_keys", "_badges", "_principals", "_enrollments", "external_accounts",
                "tags", "_affiliate_profiles", "_memberships",
            ] {
                json.key(list)
                json.beginArray()
                json.endArray()
            }
            // Decoded as a non-optional object and a string by some clients: `null` would fail them. No account
            // has a picture here, so the URL is empty.
            json.key("email_preferences")
            json.beginObject()
            json.endObject()
            json.field("_image_url", "")
            for absent in ["image_url", "location", "linkedin_url", "website_url", "bio", "guard"] {
                json.key(absent)
                json.null()
            }
        }
        var json = JSONWriter()
        json.beginObject()
        fields(&json)
        json.key("user")
        json.beginObject()
        fields(&json)
        json.endObject()
        json.endObject()
        return json.buffer
    }
}

extension Optional {
    func asyncMap<T>(_ transform: (Wrapped) async throws -> T) async rethrows -> T? {
        guard let value = self else { return nil }
        return try await transform(value)
    }
}
