/// A logged-in session as the gateway hands it out: the id to present as `Authorization: Bearer`, the
/// account it belongs to, and when it ends.
public struct Session: Hashable, Sendable, Codable {
    public var id: String
    public var accountKey: String
    /// As the gateway wrote it: ISO-8601 UTC with six fractional digits.
    public var expiration: String

    public init(id: String, accountKey: String, expiration: String) {
        self.id = id
        self.accountKey = accountKey
        self.expiration = expiration
    }
}

/// The student behind a session: what `GET /v1/users/me` says about them.
public struct UserProfile: Hashable, Sendable {
    public var key: String
    public var firstName: String
    public var lastName: String
    /// Shown to its owner only; empty for anyone else.
    public var email: String

    public init(key: String, firstName: String, lastName: String, email: String) {
        self.key = key
        self.firstName = firstName
        self.lastName = lastName
        self.email = email
    }

    public var fullName: String { [firstName, lastName].filter { !$0.isEmpty }.joined(separator: " ") }
}

/// The wire shapes of the session routes, after the 5-byte prefix.
enum SessionWire {
    static let prefix = Array(")]}'\n".utf8)

    /// The body without the prefix, when it carries one.
    static func stripped(_ body: [UInt8]) -> ArraySlice<UInt8> {
        body.starts(with: prefix) ? body.dropFirst(prefix.count) : body[...]
    }

    struct LoginAnswer: Decodable {
        struct Account: Decodable { var key: String }
        struct SessionRef: Decodable {
            var id: String
            var expiration: String
        }
        var account: Account
        var session: SessionRef
    }

    struct SignUpAnswer: Decodable {
        struct Account: Decodable { var key: String }
        var account: Account
    }

    struct UserDocument: Decodable {
        struct Email: Decodable { var address: String? }
        var key: String
        var firstName: String?
        var lastName: String?
        var email: Email?

        enum CodingKeys: String, CodingKey {
            case key, email
            case firstName = "first_name"
            case lastName = "last_name"
        }
    }

    /// Both error shapes: the session routes' `{status, parameter?, error}` and Parse's `{code, error}`.
    struct ErrorBody: Decodable {
        var status: Int?
        var code: Int?
        var parameter: String?
        var error: String?
    }
}
