import Logging
import PostgresNIO
import Tracing

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
        if error is DeadlineExceeded || error is ConnectionClosed || error is CommitUnconfirmed { return true }
        if let error = error as? PSQLError { return error.isOutage }
        return false
    }

    /// Runs one statement that only reads, and returns all its rows (request-path results are small).
    /// A statement that changes data goes through `write`.
    public func query(_ query: PostgresQuery) async throws -> [PostgresRow] {
        try await measuredWithinTimeout(query.sql) { client, logger in
            try await client.withOpenConnection { try await $0.rows(of: query, logger: logger) }
        }
    }

    /// Runs one statement that changes data, and returns its rows once its change is committed.
    ///
    /// A statement outside a transaction block commits at the Sync that follows it, after the server has
    /// sent its CommandComplete, and PostgresNIO ends the query at that CommandComplete. A server that is
    /// stopped in between (an immediate shutdown, a crash) flushes what it has buffered as it dies, so the
    /// query succeeds although its transaction never committed: a write acknowledged, then lost. PostgresNIO
    /// sends a connection's next query only after the server said it is ready for one, which it says after
    /// the commit; so an empty query after the statement, on the same connection, succeeds only once the
    /// commit is done, and fails if the connection died first. That failure is an outage like any other (a
    /// 503; a client retrying under its Idempotency-Key then finds its pin if the commit did happen).
    public func write(_ statement: PostgresQuery) async throws -> [PostgresRow] {
        try await measuredWithinTimeout(statement.sql) { client, logger in
            try await client.withOpenConnection { connection in
                let rows = try await connection.rows(of: statement, logger: logger)
                do {
                    _ = try await connection.rows(of: "", logger: logger)
                } catch is ConnectionClosed {
                    throw CommitUnconfirmed()
                }
                return rows
            }
        }
    }

    /// What every statement of the request path goes through: counted and timed, cut off at `timeout`, and
    /// traced under the task's trace when traces are on (the span named by its SQL, with its text, whose
    /// values are parameters and never in it).
    private func measuredWithinTimeout(
        _ sql: String, _ run: @escaping @Sendable (PostgresClient, Logger) async throws -> [PostgresRow]
    ) async throws -> [PostgresRow] {
        let measured = { [client, logger, timeout] in
            try await OperatorMetrics.query {
                try await withDeadline(timeout) { try await run(client, logger) }
            }
        }
        guard let context = ServiceContext.current, RequestTracing.traces(context), let tracer = RequestTracing.tracer else {
            return try await measured()
        }
        return try await tracer.withSpan(RequestTracing.statementName(sql), context: context, ofKind: .client) { span in
            span.attributes["db.system.name"] = "postgresql"
            span.attributes["db.query.text"] = sql
            return try await measured()
        }
    }
}

extension PostgresClient {
    /// `body` on a connection from the pool, and on another if the pool gave one that had closed before it
    /// noticed (a server that restarted closes them all at once): nothing was sent on that one (`rows(of:)`
    /// found it closed), so `body` runs again, on as many connections as the pool holds at most, and only
    /// while the task is not cancelled (the request's deadline cancels it).
    public func withOpenConnection<T: Sendable>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        var attempt = 1
        while true {
            do {
                return try await withConnection(body)
            } catch is ConnectionClosed where attempt < DatabaseURL.maximumConnections && !Task.isCancelled {
                attempt += 1
            }
        }
    }
}

extension PostgresConnection {
    /// `query`'s rows, the query sent from the connection's event loop. PostgresNIO drops a query written
    /// to a connection that has just closed without failing it, so that it waits for ever (or until the
    /// request's deadline): sent from elsewhere, the empty query after a commit that failed (the server's
    /// error closes the connection) hung about one time in two, and so did the next query that the pool gave
    /// that connection before it saw it close. On the event loop the connection is either closed, which is
    /// answered here, or open, and then its handler takes the query at once and fails it if the connection
    /// closes before the answer.
    public func rows(of query: PostgresQuery, logger: Logger) async throws -> [PostgresRow] {
        try await eventLoop.flatSubmit { () -> EventLoopFuture<[PostgresRow]> in
            guard !self.isClosed else { return self.eventLoop.makeFailedFuture(ConnectionClosed()) }
            let result: EventLoopFuture<PostgresQueryResult> = self.query(query, logger: logger)
            return result.map(\.rows)
        }.get()
    }
}

/// A query found its connection closed before it was sent: nothing of it reached the server.
public struct ConnectionClosed: Error {
    public init() {}
}

/// The connection closed after a change's statement and before its commit was confirmed: whether it
/// committed is not known.
public struct CommitUnconfirmed: Error {
    public init() {}
}
