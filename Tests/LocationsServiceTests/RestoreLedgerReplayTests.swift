import Foundation
import OnTheMapShared
import PostgresNIO
import ServiceKit
import TestSupport
import Testing

@testable import LocationsService

/// A class map's moderation and deletion survive a restore: each is in the restore ledger once done (the pin
/// and the map, never the moderator, who is a student), and `ledger apply` does it again.
@Suite struct RestoreLedgerReplayTests {
    @Test func aModeratorsHideAndAMapsDeletionAreRecordedAndDoneAgain() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("ledger-\(UUID().uuidString).jsonl").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try await withLiveService(configure: { $0.restoreLedger = RestoreLedger(path: path) }) { client, database in
            try await MapTests.classMap(client, "ledgered")
            let pin = try #require(
                try await client.send(.post, "/maps/ledgered/v1/StudentLocation", as: MapTests.student, body: MapTests.pinBody)
                    .json["objectId"] as? String)
            let hidden = try await client.send(
                .post, "/maps/ledgered/v1/StudentLocation/\(pin)/hide", as: MapTests.teacher, body: #"{"reason":"not a real place"}"#)
            #expect(hidden.status == .ok, "\(hidden.body)")
            try await MapTests.classMap(client, "ledger-gone")
            #expect(try await client.send(.delete, "/v1/maps/ledger-gone", as: MapTests.teacher).status == .ok)
            // A refused deletion is not recorded.
            #expect(try await client.send(.delete, "/v1/maps/ledgered", as: MapTests.student).status == .forbidden)

            let recorded = try RestoreLedger(path: path).records(since: .distantPast)
            #expect(recorded.map(\.kind) == [.hidden, .mapDeleted])
            #expect(recorded.first?.pin == pin && recorded.first?.map == "ledgered" && recorded.first?.reason == "not a real place")
            #expect(recorded.last?.map == "ledger-gone")
            let text = try String(contentsOfFile: path, encoding: .utf8)
            for trace in [MapTests.teacher.key, MapTests.teacher.firstName, MapTests.teacher.lastName] {
                #expect(!text.contains(trace), "the moderator stays out of the ledger: \(text)")
            }

            // As a restore to before them would leave things: the pin shown again, and a map the ledger will
            // delete (standing in for the one deleted, which a restore would bring back).
            try await MapTests.classMap(client, "ledger-back")
            #expect(try await client.send(.post, "/maps/ledgered/v1/StudentLocation/\(pin)/unhide", as: MapTests.teacher).status == .ok)
            let again = recorded + [RestoreLedger.Record(kind: .mapDeleted, map: "ledger-back")]
            let applied = try await database.withClient { pool in
                try await LocationCommandsHarness.withCommands(pool) { commands in
                    let replay = LedgerReplay(
                        commands: commands, maps: MapStore(database: Database(client: pool, logger: TestDatabase.logger, timeout: .seconds(30))))
                    return (try await replay.apply(again), try await replay.apply(again))
                }
            }
            #expect(applied.0 == LedgerReplay.Applied(moderated: 1, mapsDeleted: 1, already: 1))
            #expect(applied.1 == LedgerReplay.Applied(already: 3), "done again, each is in effect already")
            let list = try await client.send(.get, "/maps/ledgered/v1/StudentLocation", as: MapTests.teacher)
            #expect((list.json["results"] as? [Any])?.isEmpty == true, "the pin is hidden again: \(list.body)")
            let queue = try await client.send(.get, "/v1/maps/ledgered/hidden", as: MapTests.teacher)
            #expect((queue.json["results"] as? [[String: Any]])?.first?["reason"] as? String == "not a real place")
            #expect(try await client.send(.get, "/v1/maps/ledger-back", as: MapTests.teacher).status == .notFound)
        }
    }
}
