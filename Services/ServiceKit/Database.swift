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

    /// Whether `error` means the database could not be asked in time (unreachable, restarting, or too slow
    /// to answer), rather than a fault in the request: such a request is answered 503 with `Retry-After`.
    public static func isOutage(_ error: any Error) -> Bool {
        if error is DeadlineExceeded { return true }
        if let error = error as? PSQLError { return error.isOutage }
        return false
    }

    /// Runs one statement and returns all its rows (request-path results are small).
    public func query(_ query: PostgresQuery) async throws -> [PostgresRow] {
        try await OperatorMetrics.query {
            try await withDeadline(timeout) { [client, logger] in
                try await client.query(query, logger: logger).collect()
            }
        }
    }
}
