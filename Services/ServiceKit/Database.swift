import Logging
import PostgresNIO

/// The connection pool, plus the rule every request-path query follows: answer within `timeout` or fail
/// with `DeadlineExceeded`, so a request gets a quick 503 instead of hanging while the database is away.
public struct Database: Sendable {
    public let client: PostgresClient
    public let logger: Logger
    public var timeout: Duration

    public init(client: PostgresClient, logger: Logger, timeout: Duration = .seconds(2)) {
        self.client = client
        self.logger = logger
        self.timeout = timeout
    }

    /// Runs one statement and returns all its rows (request-path results are small).
    public func query(_ query: PostgresQuery) async throws -> [PostgresRow] {
        try await withDeadline(timeout) { [client, logger] in
            try await client.query(query, logger: logger).collect()
        }
    }
}
