import Logging
import PostgresNIO

/// Runs `body` with a connected pool, for one-shot commands and tests.
public func withPostgresClient<T: Sendable>(
    _ database: DatabaseURL, logger: Logger,
    _ body: @escaping @Sendable (PostgresClient) async throws -> T
) async throws -> T {
    // The body may ask for a connection before run() is under way; the pool waits for it, so the
    // pool's warning about that is noise here. Failures still reach the body as thrown errors.
    var poolLogger = logger
    poolLogger.logLevel = max(logger.logLevel, .error)
    let client = PostgresClient(configuration: database.configuration, backgroundLogger: poolLogger)
    return try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask {
            await client.run()
            return nil
        }
        defer { group.cancelAll() }
        return try await body(client)
    }
}

extension PSQLError {
    /// The server cannot serve now, rather than an error about the statement: it is unreachable, out of a
    /// resource it needs, or not the primary any more.
    public var isOutage: Bool {
        guard let state = serverInfo?[.sqlState] else { return true }
        // 08: connection exceptions; 53: insufficient resources (disk full, out of memory, too many
        // connections); 57P01-57P03: the server is shutting down or starting up; 25006: it refuses every
        // change (a standby a connection reached during a failover, a primary Patroni is demoting).
        return state.hasPrefix("08") || state.hasPrefix("53") || ["57P01", "57P02", "57P03", "25006"].contains(state)
    }
}
