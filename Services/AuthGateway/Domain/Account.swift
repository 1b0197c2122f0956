import Crypto
import Foundation
import OnTheMapShared
import ServiceKit

/// A person who can log in, whichever identity provider vouches for them.
struct Account: Sendable, Hashable {
    var key: String
    var provider: String
    var email: String
    var firstName: String
    var lastName: String
    /// The groups the OpenID Connect provider put the person in at their latest sign-in (the claim
    /// `OIDC_GROUPS_CLAIM` names), sorted, each once; none for other providers' accounts.
    var groups: [String] = []

    var actor: Actor { Actor(key: key, firstName: firstName, lastName: lastName) }

    /// Udacity's keys are digit strings; local accounts get the same shape so clients that expect digits cope.
    static func newKey() -> String {
        var generator = SystemRandomNumberGenerator()
        return String(1_000_000_000 + generator.next(upperBound: UInt64(9_000_000_000)))
    }
}

/// The secret a client presents to prove its session: 256 random bits, prefixed with the creation time
/// as Udacity's session ids were. Only its SHA-256 is ever stored.
struct SessionToken: Sendable, Hashable {
    let rawValue: String

    init(_ rawValue: String) { self.rawValue = rawValue }

    static func generate(at time: Timestamp = .now()) -> SessionToken {
        let bytes = (0..<32).map { _ in UInt8.random(in: .min ... .max) }
        return SessionToken("\(time.millisecondsSince1970 / 1000)S\(bytes.hexString)")
    }

    /// Both read the token's bytes where they are: every write through the gateway asks for them.
    var hash: [UInt8] {
        var token = rawValue
        return token.withUTF8 { Array(SHA256.hash(data: UnsafeRawBufferPointer($0))) }
    }

    /// Anything else cannot be one of ours; it is refused before touching the database.
    var isWellFormed: Bool {
        var token = rawValue
        return token.withUTF8 { $0.count <= 128 && $0.allSatisfy { $0 > 0x20 && $0 < 0x7F } }
    }
}
