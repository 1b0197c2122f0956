/// What can go wrong talking to the gateway, in the terms a person must tell apart: each case calls for a
/// different next step (start the gateway, retype the password, ask the operator, wait, log in again, pick
/// another pin, fix the input, join the map, ask its owner, ask for a new invite, try later).
public enum OnTheMapError: Error, Sendable, Equatable {
    /// No answer from the gateway: nothing listens there, the name does not resolve, or it did not answer in time.
    case unreachable(gateway: String, reason: String)
    /// The gateway does not know this email and password.
    case wrongCredentials
    /// The email and password are right, but the people who run the gateway disabled the account.
    case accountDisabled
    /// Too many attempts; `retryAfter` is the wait in seconds when the gateway said it.
    case throttled(retryAfter: Int?, message: String)
    /// No session, or the session has ended (logged out elsewhere, expired).
    case notLoggedIn(message: String)
    /// The pin belongs to another student.
    case notYours(message: String)
    /// The gateway refused what was sent; `message` is the gateway's own, `parameter` names the field when it said.
    case refused(message: String, parameter: String?)
    /// No such pin, place, user or map member.
    case notFound(message: String)
    /// No class map of that slug that this caller may see: the gateway answers alike when there is none and
    /// when it is for its members only and the caller is not one (or is not logged in), so as not to tell
    /// outsiders which maps exist.
    case noSuchMap(slug: String)
    /// The caller's role on the map does not allow this: posting on a map where only members post, changing
    /// a map one does not own, moderating or inviting as a member, creating a map where only some may.
    case notAllowed(message: String)
    /// The invite is wrong, revoked, expired or used up, or its map is gone.
    case invalidInvite
    /// The gateway or a service behind it failed, or answered something this client cannot read.
    case serverFault(status: Int, message: String)
}

extension OnTheMapError: CustomStringConvertible {
    public var description: String {
        switch self {
        case .unreachable(let gateway, let reason): "cannot reach \(gateway): \(reason)"
        case .wrongCredentials: "wrong email or password"
        case .accountDisabled: "this account has been disabled"
        case .throttled(let seconds, let message): seconds.map { "too many attempts; try again in \(Self.wait($0))" } ?? message
        case .notLoggedIn(let message), .notYours(let message), .notFound(let message), .notAllowed(let message): message
        case .noSuchMap(let slug): "no map \(slug), or it is for its members only"
        case .invalidInvite: "the invite is wrong, revoked, expired or used up"
        case .refused(let message, _): message
        case .serverFault(let status, let message): "the gateway failed (HTTP \(status)): \(message)"
        }
    }

    /// "14 min", "40 s", "2 h": how long a person has to wait, rounded up.
    public static func wait(_ seconds: Int) -> String {
        if seconds < 60 { return "\(max(seconds, 1)) s" }
        if seconds < 3600 { return "\((seconds + 59) / 60) min" }
        return "\((seconds + 3599) / 3600) h"
    }
}
