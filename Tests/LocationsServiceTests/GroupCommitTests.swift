import OnTheMapShared
import PostgresNIO
import ServiceKit
import ServiceLifecycle
import Synchronization
import TestSupport
import Testing

@testable import LocationsService

/// Posts that arrive together are committed together, and each is still answered as if alone.
@Suite struct GroupCommitTests {

    @Test func concurrentPostsShareCommitsAndEachIsAppendedOnce() async throws {
        let database = try await TestDatabase.create()
        try await database.withClient { client in
            try await LocationCommandsHarness.withCommands(client) { commands in
                let answers = try await withThrowingTaskGroup(of: ObjectID.self, returning: [ObjectID].self) { group in
                    for index in 0..<64 {
                        group.addTask {
                            try await commands.post(TestPin.input, context: .init(actor: LocationCommandsHarness.owners[index % 40])).objectId
                        }
                    }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
                #expect(Set(answers).count == 64)
                let rows = try await client.query(
                    """
                    SELECT count(*), count(DISTINCT transaction_id), (SELECT count(*) FROM locations.pins) FROM locations.events
                    """, logger: TestDatabase.logger
                ).collect()
                let (events, transactions, pins) = try rows[0].decode((Int, Int, Int).self)
                #expect(events == 64)
                #expect(pins == 64)
                #expect(transactions < events, "64 posts at once should need fewer than 64 commits")
            }
        }
    }

    @Test func retriesAmongConcurrentPostsGetTheFirstAnswerAndTheOthersAreNotHeldBack() async throws {
        let database = try await TestDatabase.create()
        try await database.withClient { client in
            try await LocationCommandsHarness.withCommands(client) { commands in
                let retried = LocationCommands.Context(actor: LocationCommandsHarness.owners[0], idempotencyKey: "retry-1", requestHash: "same-body")
                let answers = try await withThrowingTaskGroup(of: (Bool, ObjectID).self, returning: [(Bool, ObjectID)].self) { group in
                    for index in 0..<32 {
                        group.addTask {
                            let isRetry = index % 8 == 0
                            let context = isRetry ? retried : .init(actor: LocationCommandsHarness.owners[1 + index % 39])
                            return (isRetry, try await commands.post(TestPin.input, context: context).objectId)
                        }
                    }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
                #expect(Set(answers.filter(\.0).map(\.1)).count == 1, "every retry gets the first answer")
                #expect(Set(answers.filter { !$0.0 }.map(\.1)).count == 28)
                #expect(try await LocationCommandsHarness.eventTotal(client) == 29)
            }
        }
    }

    /// Posts in flight and queued when shutdown begins are written and acknowledged before the service
    /// ends; a post after that is refused at once as the service stopping, never left waiting. A lock on the
    /// log holds the first batches in the database while the others queue behind them.
    @Test func aShutdownWritesWhatIsQueuedThenRefusesNewPosts() async throws {
        let database = try await TestDatabase.create()
        try await database.withClient { client in
            let database = Database(client: client, logger: TestDatabase.logger, timeout: .seconds(30))
            let events = EventStore(database: database)
            let posts = PostAppender(events: events)
            let commands = LocationCommands(
                log: PostgresLocationLog(events: events, posts: posts, readModel: ReadModel(database: database)), didAppend: {})
            let (locked, lockTaken) = AsyncStream<Void>.makeStream()
            let (released, release) = AsyncStream<Void>.makeStream()
            let holder = Task {
                try await client.withConnection { connection in
                    _ = try await connection.query("BEGIN", logger: TestDatabase.logger)
                    _ = try await connection.query("LOCK TABLE locations.events IN EXCLUSIVE MODE", logger: TestDatabase.logger)
                    lockTaken.yield()
                    for await _ in released { break }
                    _ = try await connection.query("COMMIT", logger: TestDatabase.logger)
                }
            }
            for await _ in locked { break }
            let queued = (0..<50).map { index in
                Task { try await commands.post(TestPin.input, context: .init(actor: LocationCommandsHarness.owners[index % 40])).objectId }
            }
            // Two batches of one are held by the lock; the other 48 wait for them.
            try #require(try await waitFor(within: .seconds(30)) { posts.queuedCount == queued.count - 2 } != nil)

            let group = ServiceGroup(configuration: .init(services: [posts], logger: TestDatabase.logger))
            let ended = Atomic(false)
            let running = Task {
                try await group.run()
                ended.store(true, ordering: .sequentiallyConsistent)
            }
            await group.triggerGracefulShutdown()
            try #require(try await waitFor(within: .seconds(30)) { posts.stopped } != nil)
            await #expect(throws: ServiceStopping()) {
                try await commands.post(TestPin.input, context: .init(actor: LocationCommandsHarness.owners[0]))
            }
            let endedEarly = ended.load(ordering: .sequentiallyConsistent)
            #expect(!endedEarly, "the service must not end while posts it took in are unwritten")
            release.yield()
            try await holder.value
            try await running.value
            #expect(try await LocationCommandsHarness.eventTotal(client) == 50, "the service ends once every post taken in is committed")

            var acknowledged: Set<ObjectID> = []
            for post in queued { acknowledged.insert(try await post.value) }
            #expect(acknowledged.count == 50)
            let logged = try await client.query("SELECT stream_name FROM locations.events", logger: TestDatabase.logger).collect()
            #expect(Set(try logged.map { try $0.decode(String.self) }) == Set(acknowledged.map { StreamName($0).rawValue }))
        }
    }
}
