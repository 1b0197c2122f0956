import OnTheMapShared
import PostgresNIO
import ServiceKit
import TestSupport

@testable import LocationsService

/// The service's write commands straight on a database, without HTTP, for the suites about what they
/// store (replay, group commit).
enum LocationCommandsHarness {
    /// Forty students who own pins.
    static let owners = (0..<40).map { Actor(key: "owner-\($0)", firstName: "First\($0)", lastName: "Last \($0)") }

    /// The service's commands on `client`, its group commit running while `body` does.
    static func withCommands<T: Sendable>(_ client: PostgresClient, _ body: (LocationCommands) async throws -> T) async throws -> T {
        try await withLog(client) { log in try await body(LocationCommands(log: log, didAppend: {})) }
    }

    /// The service's log on `client`, its group commit running while `body` does.
    static func withLog<T: Sendable>(_ client: PostgresClient, _ body: (PostgresLocationLog) async throws -> T) async throws -> T {
        let database = Database(client: client, logger: TestDatabase.logger, timeout: .seconds(30))
        let events = EventStore(database: database)
        let posts = PostAppender(events: events)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await posts.run() }
            defer { group.cancelAll() }
            return try await body(PostgresLocationLog(events: events, posts: posts, readModel: ReadModel(database: database)))
        }
    }

    /// Every event committed so far, in log order (a hidden pin's too), once the reading horizon has passed
    /// them all: the horizon is the oldest transaction still open in the whole cluster, and another suite's
    /// may hold it back a while.
    static func allEvents(_ client: PostgresClient) async throws -> [RecordedEvent] {
        let total = try await eventTotal(client)
        var events: [RecordedEvent] = []
        _ = try await waitFor(within: .seconds(30), every: .milliseconds(50)) {
            let rows = try await client.query(
                """
                SELECT \(unescaped: RecordedEvent.columns) FROM locations.events
                WHERE transaction_id < pg_snapshot_xmin(pg_current_snapshot()) ORDER BY transaction_id, position
                """, logger: TestDatabase.logger)
            events = try await rows.collect().map(RecordedEvent.init)
            return events.count >= total
        }
        return events
    }

    static func eventTotal(_ client: PostgresClient) async throws -> Int {
        try await client.query("SELECT count(*) FROM locations.events", logger: TestDatabase.logger).collect().first?.decode(Int.self) ?? 0
    }
}
