import Foundation
import ServiceKit

/// Slows down password guessing: too many failures for one account, or from one client address, within
/// the window and further attempts are refused, right or wrong, until enough failures age out. Sign-ups
/// are counted per client address the same way, since each costs a password hash and leaves an account.
///
/// An attempt is admitted and counted as a failure in one step (`LoginFailureStore.count`), before its
/// password is checked; a right password takes it back. So guesses sent in parallel are counted in turn,
/// and no more of them are checked than the limit allows.
struct LoginThrottle: Sendable {
    struct Policy: Sendable {
        var window: Duration = .seconds(15 * 60)
        var failuresPerAccount = 5
        var failuresPerAddress = 20
        var signUpWindow: Duration = .seconds(60 * 60)
        var signUpsPerAddress = 10
    }

    let failures: any LoginFailureStore
    let policy: Policy
    /// An attempt's time: a failure counts until it is `window` old by this clock.
    let clock: any WallClock

    /// A login attempt admitted and, until it is known to be right, counted as a failure.
    struct Attempt: Sendable {
        let id: UUID
        let subjects: [String]
    }

    enum Admission: Sendable {
        case admitted(Attempt)
        case throttled(retryAfter: Int)
    }

    static func accountSubject(_ email: EmailAddress) -> String { "account:" + email.key }
    static func addressSubject(_ address: String) -> String { "address:" + address }
    static func signUpSubject(_ address: String) -> String { "signup:" + address }

    /// Admits a login for this account (nil when the credential names none, as a token does) from this
    /// address and counts it as a failure, or says how many seconds to wait.
    func admitLogin(account: EmailAddress?, address: String?) async throws -> Admission {
        var limits: [(String, Int)] = []
        if let account { limits.append((Self.accountSubject(account), policy.failuresPerAccount)) }
        if let address { limits.append((Self.addressSubject(address), policy.failuresPerAddress)) }
        let attempt = Attempt(id: UUID(), subjects: limits.map(\.0))
        if let seconds = try await count(attempt, limits: limits.map(\.1), window: policy.window) {
            return .throttled(retryAfter: seconds)
        }
        return .admitted(attempt)
    }

    /// Seconds until this address may sign up again, or nil when this sign-up is admitted (and counted).
    func admitSignUp(address: String) async throws -> Int? {
        try await count(
            Attempt(id: UUID(), subjects: [Self.signUpSubject(address)]),
            limits: [policy.signUpsPerAddress], window: policy.signUpWindow)
    }

    /// The password was right: the attempt was no failure, and the account's earlier typos are forgiven
    /// (the address keeps its record).
    func succeeded(_ attempt: Attempt, account: EmailAddress?) async throws {
        try await failures.remove(attempt, forgiving: account.map(Self.accountSubject))
    }

    /// The password could not be checked (the identity provider failed): the attempt is no failure either.
    func withdraw(_ attempt: Attempt) async throws {
        try await failures.remove(attempt, forgiving: nil)
    }

    private func count(_ attempt: Attempt, limits: [Int], window: Duration) async throws -> Int? {
        try await failures.count(attempt, limits: limits, window: window, at: clock.now)
    }
}
