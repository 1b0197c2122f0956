import Foundation
import OnTheMapShared
import PostgresNIO
import ServiceKit
import TestSupport
import Testing

@testable import LocationsService
@testable import ServiceTwins

/// No student can have more than `PINS_PER_STUDENT` pins on the map: a post past it takes their oldest
/// pin off, in the post's own transaction, and the log says why, so the read model, replay, the change feed
/// and the history agree.
@Suite struct PinCapTests {
    @Test func aPostPastTheCapTakesTheStudentsOldestPinOffAndTheLogSaysWhyAndReplayAgrees() async throws {
        try await withLiveService(configure: { $0.pinsPerStudent = 2 }) { client, database in
            let first = try await client.post(as: TestActors.jarrod, mapString: "First")
            let second = try await client.post(as: TestActors.jarrod, mapString: "Second")
            let other = try await client.post(as: TestActors.amara, mapString: "Someone else's")
            let third = try await client.post(as: TestActors.jarrod, mapString: "Third")

            let listed = try await client.send(.get, "/v1/StudentLocation?limit=100&order=-updatedAt").json["results"] as? [[String: Any]]
            #expect(listed?.compactMap { $0["objectId"] as? String } == [third, other, second])
            #expect(try await client.send(.get, "/v1/StudentLocation/\(first)").status == .notFound)
            let figures = metricSamples(try await client.send(.get, "/metrics").body)
            #expect(figures["onthemap_pin_cap_removals"] == 1, "an operator sees what the cap took off")

            try await database.withClient { postgres in
                let history = try await postgres.query(
                    """
                    SELECT event_type, metadata->>'reason', actor_key, data->>'deletedAt' FROM locations.events
                    WHERE stream_name = \("location-" + first) ORDER BY stream_version
                    """, logger: TestDatabase.logger
                ).collect().map { try $0.decode((String, String?, String, String?).self) }
                #expect(history.map(\.0) == ["LocationPosted", "LocationDeleted"])
                #expect(history.last?.1 == "pinCap")
                #expect(history.last?.2 == TestActors.jarrod.key, "the posting student is the deletion's actor")
                let thirdCreated = try await postgres.query(
                    "SELECT data->>'createdAt' FROM locations.events WHERE stream_name = \("location-" + third)", logger: TestDatabase.logger
                ).collect().first?.decode(String.self)
                #expect(history.last?.3 == thirdCreated, "the pin left the map when the new one arrived")

                let verified = try await Replayer(client: postgres, logger: TestDatabase.logger).run(
                    verify: true, progress: ReplayTests.quietProgress)
                #expect(verified.differenceCount == 0, "\(verified.differences)")
                // After a replay swaps in a rebuilt read model, the cap still holds.
                _ = try await Replayer(client: postgres, logger: TestDatabase.logger).run(verify: false, progress: ReplayTests.quietProgress)
            }
            let fourth = try await client.post(as: TestActors.jarrod, mapString: "Fourth")
            let mine = try await client.send(.get, "/v1/StudentLocation?uniqueKey=\(TestActors.jarrod.key)&limit=100&order=-updatedAt")
            #expect((mine.json["results"] as? [[String: Any]])?.compactMap { $0["objectId"] as? String } == [fourth, third])
        }
    }

    /// Posts of several students go together into one statement (the group commit), and two such
    /// statements at once each wait for the other's students in the same order: none deadlocks.
    @Test func postsSentInParallelLeaveExactlyTheCapForEveryStudent() async throws {
        try await withLiveService(configure: { $0.pinsPerStudent = 2 }) { client, database in
            let students = (0..<8).map(TestActors.student)
            let ids = try await withThrowingTaskGroup(of: String.self) { group in
                for index in 0..<48 {
                    group.addTask { try await client.post(as: students[index % students.count], mapString: "Place \(index)") }
                }
                return try await group.reduce(into: Set<String>()) { $0.insert($1) }
            }
            #expect(ids.count == 48, "every post was acknowledged")
            for student in students {
                let mine = try await client.send(.get, "/v1/StudentLocation?uniqueKey=\(student.key)&limit=100")
                #expect((mine.json["results"] as? [[String: Any]])?.count == 2, "\(student.key)")
            }
            try await database.withClient { postgres in
                let deleted = try await postgres.query(
                    "SELECT count(*) FROM locations.events WHERE event_type = 'LocationDeleted' AND metadata->>'reason' = 'pinCap'",
                    logger: TestDatabase.logger
                ).collect().first?.decode(Int.self)
                #expect(deleted == 48 - 16)
                let verified = try await Replayer(client: postgres, logger: TestDatabase.logger).run(
                    verify: true, progress: ReplayTests.quietProgress)
                #expect(verified.differenceCount == 0, "\(verified.differences)")
            }
        }
    }

    @Test func oneMeansANewPostMovesTheStudentsPinAsTheAppsExpect() async throws {
        try await withRouter(pinsPerStudent: 1) { client, log in
            _ = try await client.post(as: TestActors.amara, mapString: "Lagos, Nigeria")
            let moved = try await client.post(as: TestActors.amara, mapString: "Accra, Ghana")
            let listed = try await client.send(.get, "/v1/StudentLocation?limit=100").json["results"] as? [[String: Any]]
            #expect(listed?.count == 1)
            #expect(listed?.first?["objectId"] as? String == moved)
            #expect(listed?.first?["mapString"] as? String == "Accra, Ghana")
            #expect(log.eventCount == 3, "posted, posted, and the first one's deletion")
        }
    }

    @Test func theCapIsConfiguredAndABadValueIsRefusedAtStartUp() throws {
        let base = ["DATABASE_URL": "postgres://u@127.0.0.1:5432/d", "INTERNAL_TOKEN": TestDatabase.internalToken]
        #expect(try ServiceConfiguration.fromEnvironment(base).pinsPerStudent == 3)
        #expect(try ServiceConfiguration.fromEnvironment(base.merging(["PINS_PER_STUDENT": "1"]) { $1 }).pinsPerStudent == 1)
        #expect(throws: ConfigurationError.self) { try ServiceConfiguration.fromEnvironment(base.merging(["PINS_PER_STUDENT": "0"]) { $1 }) }
    }
}
