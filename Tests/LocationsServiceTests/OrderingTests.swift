import Foundation
import OnTheMapShared
import PostgresNIO
import ServiceKit
import Synchronization
import TestSupport
import Testing

@testable import LocationsService

/// A follower of the log must never skip an event whose transaction took its position early but
/// committed late. Many connections append with random pauses before COMMIT while a follower reads.
@Suite struct OrderingTests {
    struct Appended: Sendable {
        let objectId: String
        let began: ContinuousClock.Instant
        let committed: ContinuousClock.Instant
    }

    @Test func followerSeesEveryEventOnceInCommitOrderDespiteLateCommits() async throws {
        let database = try await TestDatabase.create()
        let writers = 16
        let perWriter = 20
        let expected = writers * perWriter
        try await database.withClient { client in
            // What is checked is order, not speed: the follower's reads may wait behind the writers and the
            // other tests on the shared cluster for longer than a request would (a 2 s deadline ran out once).
            let store = EventStore(database: Database(client: client, logger: TestDatabase.logger, timeout: .seconds(30)))
            let writing = StopFlag()

            let follower = Task { () -> [RecordedEvent] in
                var seen: [RecordedEvent] = []
                var cursor = LogPosition.start
                // Events are read up to the oldest transaction still running on the cluster, other tests' too:
                // nothing here can say when that moves, so the follower reads again until it has them all.
                _ = try await waitFor(within: .seconds(60), every: .milliseconds(1)) {
                    let batch = try await store.events(after: cursor, limit: 50)
                    seen += batch.events
                    cursor = batch.readThrough ?? cursor
                    return batch.readThrough == nil && writing.isStopped && seen.count >= expected
                }
                return seen
            }

            let appended = try await withThrowingTaskGroup(of: [Appended].self) { group in
                for writer in 0..<writers {
                    group.addTask {
                        var random = SeededRandom(seed: UInt64(writer) + 1)
                        var mine: [Appended] = []
                        for index in 0..<perWriter {
                            let objectId = ObjectID("w\(writer)e\(index)")
                            let pause = Double(random.next() % 20) / 1000
                            let began = ContinuousClock.now
                            try await client.withTransaction(logger: TestDatabase.logger) { connection in
                                try await Self.insertEvent(objectId, on: connection)
                                // The transaction holds its position while later ones commit.
                                try await connection.query("SELECT pg_sleep(\(pause))", logger: TestDatabase.logger)
                            }
                            mine.append(Appended(objectId: objectId.rawValue, began: began, committed: .now))
                        }
                        return mine
                    }
                }
                return try await group.reduce(into: []) { $0 += $1 }
            }
            writing.stop()
            let seen = try await follower.value

            let seenIds = seen.map(\.change.objectId.rawValue)
            #expect(seenIds.count == expected, "the follower saw \(seenIds.count) of \(expected) events")
            #expect(Set(seenIds).count == seenIds.count, "an event was delivered twice")
            let skipped = Set(appended.map(\.objectId)).subtracting(seenIds)
            #expect(skipped.isEmpty, "the follower skipped \(skipped.count) events, e.g. \(skipped.sorted().prefix(5))")
            #expect(zip(seen, seen.dropFirst()).allSatisfy { $0.position < $1.position })
            // An event committed before another began must be read first.
            let order = Dictionary(uniqueKeysWithValues: seenIds.enumerated().map { ($1, $0) })
            var inversions = 0
            for earlier in appended {
                for later in appended where earlier.committed < later.began {
                    if let a = order[earlier.objectId], let b = order[later.objectId], a > b { inversions += 1 }
                }
            }
            #expect(inversions == 0)
        }
    }

    static func insertEvent(_ objectId: ObjectID, on connection: PostgresConnection) async throws {
        let now = Timestamp.now()
        let location = StudentLocation(
            objectId: objectId, uniqueKey: "k", firstName: "F", lastName: "L",
            mapString: "Berlin", mediaURL: "https://udacity.com", latitude: 52.5, longitude: 13.4,
            createdAt: now, updatedAt: now)
        let data = String(buffer: location.json)
        try await connection.query(
            """
            INSERT INTO locations.events (stream_name, stream_version, event_type, schema_version, data, metadata, actor_key)
            VALUES (\(StreamName(objectId).rawValue), 1, 'LocationPosted', 1, \(data)::jsonb, '{}'::jsonb, 'k')
            """, logger: TestDatabase.logger)
    }
}
