import ArgumentParser
import OnTheMapClient

/// The process's exit codes, one per thing a script must tell apart. They are part of the interface:
/// never renumber one.
enum ExitStatus: Int32, CaseIterable {
    case success = 0
    case failure = 1
    case unreachable = 3
    case wrongCredentials = 4
    case notLoggedIn = 5
    case throttled = 6
    case notYours = 7
    case refused = 8
    case notFound = 9
    case cancelled = 10
    case accountDisabled = 11
    case noSuchMap = 12
    case notAllowed = 13
    case usage = 64

    var meaning: String {
        switch self {
        case .success: "done"
        case .failure: "the gateway failed, or another error"
        case .unreachable: "cannot reach the gateway"
        case .wrongCredentials: "wrong email or password"
        case .notLoggedIn: "not logged in, or the session has ended"
        case .throttled: "too many attempts; wait and try again"
        case .notYours: "the pin belongs to someone else"
        case .refused: "the gateway refused the input"
        case .notFound: "no such pin, place, member or invite"
        case .cancelled: "you said no"
        case .accountDisabled: "the account is disabled; ask the people who run the gateway"
        case .noSuchMap: "no such map, or it is for its members only"
        case .notAllowed: "your role on the map does not allow it"
        case .usage: "wrong usage"
        }
    }

    static var table: String {
        allCases.map { "  \(String($0.rawValue).padding(toLength: 4, withPad: " ", startingAt: 0)) \($0.meaning)" }.joined(separator: "\n")
    }
}

/// A failure the command line reports itself: one line for stderr and its exit status.
struct CommandFailure: Error {
    var message: String
    var status: ExitStatus

    init(_ message: String, _ status: ExitStatus) {
        self.message = message
        self.status = status
    }

    /// What the person should read, and do next, for each of the client's errors.
    init(_ error: OnTheMapError, gateway: String) {
        switch error {
        case .unreachable(_, let reason):
            self.init("cannot reach \(gateway): \(reason). Is the gateway up? (scripts/up.sh)", .unreachable)
        case .wrongCredentials:
            self.init("wrong email or password", .wrongCredentials)
        case .accountDisabled:
            self.init("this account has been disabled on \(gateway); ask the people who run it to enable it", .accountDisabled)
        case .throttled:
            self.init(error.description, .throttled)
        case .notLoggedIn(let message):
            let why = message == "not logged in" ? "not logged in to \(gateway)" : message
            self.init("\(why); log in with: onthemap login", .notLoggedIn)
        case .notYours(let message):
            self.init("that pin is not yours (\(message))", .notYours)
        case .refused(let message, _):
            self.init("refused: \(message)", .refused)
        case .notFound(let message):
            self.init(message, .notFound)
        case .noSuchMap(let slug):
            self.init(
                "no map \(slug) on \(gateway), or it is for its members only: check the name, log in (onthemap login), "
                    + "or join it with an invite (onthemap maps join URL)", .noSuchMap)
        case .notAllowed(let message):
            self.init("not allowed: \(message)", .notAllowed)
        case .invalidInvite:
            self.init("that invite does not work: it is wrong, revoked, expired or used up; ask for a new one", .notFound)
        case .serverFault(let status, let message):
            self.init("the gateway failed (HTTP \(status)): \(message) Try again shortly.", .failure)
        }
    }
}
