import OnTheMapShared
import PostgresNIO
import ServiceKit
import TestSupport
import Testing

@testable import LocationsService

/// Posts that arrive together are committed together, and each is still answered as if alone.
@Suite struct GroupCommitTests {
    static let pin = LocationInput(mapString: "Lagos, Nigeria", mediaURL: "https://example.com", latitude: 6.45, longitude: 3.39)

    @Test func concurrentPostsShareCommitsAndEachIsAppendedOnce() async throws {
        let database = try await TestDatabase.create()
        try await database.withClient { client in
            let commands = ReplayTests.commands(client)
            let answers = try await withThrowingTaskGroup(of: ObjectID.self, returning: [ObjectID].self) { group in
                for index in 0..<64 {
                    group.addTask {
                        try await commands.post(Self.pin, context: .init(actor: ReplayTests.owners[index % 40])).objectId
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

    @Test func retriesAmongConcurrentPostsGetTheFirstAnswerAndTheOthersAreNotHeldBack() async throws {
        let database = try await TestDatabase.create()
        try await database.withClient { client in
            let commands = ReplayTests.commands(client)
            let retried = LocationCommands.Context(actor: ReplayTests.owners[0], idempotencyKey: "retry-1", requestHash: "same-body")
            let answers = try await withThrowingTaskGroup(of: (Bool, ObjectID).self, returning: [(Bool, ObjectID)].self) { group in
                for index in 0..<32 {
                    group.addTask {
                        let isRetry = index % 8 == 0
                        let context = isRetry ? retried : .init(actor: ReplayTests.owners[1 + index % 39])
                        return (isRetry, try await commands.post(Self.pin, context: context).objectId)
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(Set(answers.filter(\.0).map(\.1)).count == 1, "every retry gets the first answer")
            #expect(Set(answers.filter { !$0.0 }.map(\.1)).count == 28)
            #expect(try await ReplayTests.eventTotal(client) == 29)
        }
    }
}
