import Foundation
import OnTheMapShared
import PostgresNIO
import ServiceKit

/// The failed logins (and sign-ups) `LoginThrottle` counts, by subject: an account, a client address.
/// `PostgresLoginFailureStore` is the gateway's, shared by every replica; the tests'
/// `MemoryLoginFailureStore` (module `ServiceTwins`) holds the same in memory, for router-level tests of what
/// is decided above the store.
protocol LoginFailureStore: Sendable {
    /// Counts the attempt as a failure of each of its subjects at `moment`, unless one of them already has
    /// its limit (`limits`, in the order of the subjects) of failures within `window` before `moment`: then
    /// counts nothing and answers the seconds until the oldest of those ages out (at least 1). Checking and
    /// counting are one step, so attempts sent in parallel are counted in turn.
    func count(_ attempt: LoginThrottle.Attempt, limits: [Int], window: Duration, at moment: Timestamp) async throws -> Int?
    /// Takes back what the attempt counted; with `subject`, every failure of that subject among the
    /// attempt's subjects too.
    func remove(_ attempt: LoginThrottle.Attempt, forgiving subject: String?) async throws
}

/// `auth.login_failures`, counted by `auth.count_attempt`.
struct PostgresLoginFailureStore: LoginFailureStore {
    let database: Database

    func count(_ attempt: LoginThrottle.Attempt, limits: [Int], window: Duration, at moment: Timestamp) async throws -> Int? {
        let rows = try await database.write(
            """
            SELECT auth.count_attempt(
                \(attempt.subjects)::text[], \(limits)::bigint[], \(window.components.seconds), \(attempt.id), \(moment.iso8601)::timestamptz)
            """)
        return try rows.first?.decode(Int?.self)
    }

    func remove(_ attempt: LoginThrottle.Attempt, forgiving subject: String?) async throws {
        if let subject {
            _ = try await database.write(
                """
                DELETE FROM auth.login_failures
                WHERE subject = ANY (\(attempt.subjects)::text[])
                  AND (attempt = \(attempt.id) OR subject = \(subject))
                """)
        } else {
            _ = try await database.write(
                """
                DELETE FROM auth.login_failures WHERE subject = ANY (\(attempt.subjects)::text[]) AND attempt = \(attempt.id)
                """)
        }
    }
}
