import Foundation
import PostgresNIO
import ServiceKit

/// Slows down password guessing: too many failures for one account, or from one client address, within
/// the window and further attempts are refused, right or wrong, until enough failures age out.
struct LoginThrottle: Sendable {
    struct Policy: Sendable {
        var window: Duration = .seconds(15 * 60)
        var failuresPerAccount = 5
        var failuresPerAddress = 20
    }

    let database: Database
    let policy: Policy

    static func accountSubject(_ username: String) -> String { "account:" + username.lowercased() }
    static func addressSubject(_ address: String) -> String { "address:" + address }

    /// Seconds until a login may be tried again, or nil when it may be tried now.
    func retryAfter(username: String, address: String?) async throws -> Int? {
        var limits = [(Self.accountSubject(username), policy.failuresPerAccount)]
        if let address { limits.append((Self.addressSubject(address), policy.failuresPerAddress)) }
        var wait = 0
        let window = Int(policy.window.components.seconds)
        for (subject, limit) in limits {
            // Blocked while `limit` failures lie inside the window: until the limit-th newest ages out.
            let rows = try await database.query("""
                SELECT ceil(extract(epoch FROM failed_at + make_interval(secs => \(window)) - now()))::int
                FROM auth.login_failures
                WHERE subject = \(subject) AND failed_at > now() - make_interval(secs => \(window))
                ORDER BY failed_at DESC
                OFFSET \(limit - 1) LIMIT 1
                """)
            if let seconds = try rows.first?.decode(Int.self) { wait = max(wait, seconds, 1) }
        }
        return wait > 0 ? wait : nil
    }

    func recordFailure(username: String, address: String?) async throws {
        var subjects = [Self.accountSubject(username)]
        if let address { subjects.append(Self.addressSubject(address)) }
        _ = try await database.query("""
            INSERT INTO auth.login_failures (subject) SELECT unnest(\(subjects)::text[])
            """)
    }

    /// A successful login forgives the account's earlier typos (the address keeps its record).
    func recordSuccess(username: String) async throws {
        _ = try await database.query("""
            DELETE FROM auth.login_failures WHERE subject = \(Self.accountSubject(username))
            """)
    }
}
