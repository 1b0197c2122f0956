import OnTheMapShared
import PostgresNIO
import ServiceKit
import ServiceLifecycle
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

    /// Posts queued when shutdown begins are written and acknowledged before the service ends; a post after
    /// that is refused at once as the service stopping, never left waiting.
    @Test func aShutdownWritesWhatIsQueuedThenRefusesNewPosts() async throws {
        let database = try await TestDatabase.create()
        try await database.withClient { client in
            let database = Database(client: client, logger: TestDatabase.logger, timeout: .seconds(30))
            let events = EventStore(database: database)
            let posts = PostAppender(events: events)
            let commands = LocationCommands(
                log: PostgresLocationLog(events: events, posts: posts, readModel: ReadModel(database: database)), didAppend: {})
            let queued = (0..<50).map { index in
                Task { try await commands.post(TestPin.input, context: .init(actor: LocationCommandsHarness.owners[index % 40])).objectId }
            }
            while posts.queuedCount < queued.count { await Task.yield() }

            let group = ServiceGroup(configuration: .init(services: [posts], logger: TestDatabase.logger))
            await group.triggerGracefulShutdown()
            try await group.run()

            var acknowledged: Set<ObjectID> = []
            for post in queued { acknowledged.insert(try await post.value) }
            #expect(acknowledged.count == 50)
            let logged = try await client.query("SELECT stream_name FROM locations.events", logger: TestDatabase.logger).collect()
            #expect(Set(try logged.map { try $0.decode(String.self) }) == Set(acknowledged.map { StreamName($0).rawValue }))
            await #expect(throws: ServiceStopping()) {
                try await commands.post(TestPin.input, context: .init(actor: LocationCommandsHarness.owners[0]))
            }
        }
    }
}
