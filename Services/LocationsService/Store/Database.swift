import Logging
import PostgresNIO

/// The connection pool, plus the rule every request-path query follows: answer within `timeout` or fail
/// with `DeadlineExceeded`, so a request gets a quick 503 instead of hanging while the database is away.
struct Database: Sendable {
    let client: PostgresClient
    let logger: Logger
    var timeout: Duration = .seconds(2)

    /// Runs one statement and returns all its rows (request-path results are small).
    func query(_ query: PostgresQuery) async throws -> [PostgresRow] {
        try await withDeadline(timeout) { [client, logger] in
            try await client.query(query, logger: logger).collect()
        }
    }
}
