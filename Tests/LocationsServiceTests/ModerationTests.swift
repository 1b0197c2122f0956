import Foundation
import OnTheMapShared
import PostgresNIO
import ServiceKit
import TestSupport
import Testing

@testable import LocationsService

/// An operator hides a pin and brings it back: `locations-service moderate`, as events in the log.
@Suite struct ModerationTests {
    /// `locations-service moderate ARGUMENTS…` on `database`, as an operator runs it beside the service.
    static func moderate(_ arguments: [String], on database: TestDatabase) async throws -> (status: Int32, output: String) {
        try await ServiceProcess.command(
            "locations-service", ["moderate"] + arguments, environment: ["DATABASE_URL": database.url, "LOG_LEVEL": "warning"])
    }

    static func verify(_ database: TestDatabase) async throws -> Replayer.Summary {
        try await database.withClient { client in
            try await Replayer(client: client, logger: TestDatabase.logger).run(verify: true, progress: ReplayTests.quietProgress)
        }
    }

    @Test func hidingAHiddenPinUnhidingAVisibleOneAndTouchingADeletedOneAreRefusedInOneLine() async throws {
        let database = try await TestDatabase.create()
        let (kept, deleted) = try await database.withClient { client in
            try await LocationCommandsHarness.withCommands(client) { commands in
                let input = LocationInput(mapString: "Berlin", mediaURL: "https://a.example", latitude: 52.5, longitude: 13.4)
                let kept = try await commands.post(input, context: .init(actor: TestActors.jarrod)).objectId
                let deleted = try await commands.post(input, context: .init(actor: TestActors.amara)).objectId
                try await commands.delete(deleted, ifMatch: nil, context: .init(actor: TestActors.amara))
                return (kept, deleted)
            }
        }
        let notHidden = try await Self.moderate(["unhide", kept.rawValue, "--operator", "ops"], on: database)
        #expect(notHidden.status == 1)
        #expect(notHidden.output == "locations-service: pin \(kept) is not hidden\n")
        #expect(try await Self.moderate(["hide", kept.rawValue, "--reason", "abuse", "--operator", "ops"], on: database).status == 0)
        let twice = try await Self.moderate(["hide", kept.rawValue, "--reason", "abuse", "--operator", "ops"], on: database)
        #expect(twice.status == 1)
        #expect(twice.output == "locations-service: pin \(kept) is hidden already; `moderate unhide \(kept)` brings it back\n")
        for arguments in [["hide", deleted.rawValue, "--reason", "abuse"], ["unhide", deleted.rawValue]] {
            let refused = try await Self.moderate(arguments + ["--operator", "ops"], on: database)
            #expect(refused.status == 1)
            #expect(refused.output == "locations-service: pin \(deleted) was deleted by its owner; there is nothing to hide or bring back\n")
        }
        let unknown = try await Self.moderate(["unhide", "ZZZZZZZZZZ", "--operator", "ops"], on: database)
        #expect(unknown.output == "locations-service: no pin ZZZZZZZZZZ was ever posted\n")
        let blank = try await Self.moderate(["hide", kept.rawValue, "--reason", " ", "--operator", "ops"], on: database)
        #expect(blank.status == 1)
        #expect(blank.output == "locations-service: say why with --reason; it is kept in the log\n")
        let events = try await database.withClient { try await LocationCommandsHarness.eventTotal($0) }
        #expect(events == 4, "only the one hide was appended")
    }

    /// What the gateway's live feed reads: a hide as the pin's removal (its reason stays in the log), an
    /// unhide as the pin. The log and its followers in memory, as the router's tests have them.
    @Test func theChangeFeedCarriesAHideAsARemovalAndAnUnhideAsThePin() async throws {
        try await withRouter { client, log in
            let id = try await client.post(as: TestActors.joao, mapString: "Porto")
            let start = try await client.send(.get, "/v1/StudentLocation/changes?after=now&events=false")
            let cursor = try #require(start.json["cursor"] as? String)
            let operatorActor = LocationCommands.Context(actor: Actor(key: "operator:ops", firstName: "ops", lastName: ""))
            let commands = LocationCommands(log: log, didAppend: {})
            _ = try await commands.hide(ObjectID(id), reason: "spam", context: operatorActor)
            _ = try await commands.unhide(ObjectID(id), context: operatorActor)

            let page = try await client.send(.get, "/v1/StudentLocation/changes?after=\(cursor)")
            let events = try #require(page.json["events"] as? [[String: Any]])
            #expect(events.map { $0["type"] as? String } == ["LocationHidden", "LocationUnhidden"])
            let removal = events[0]["deletion"] as? [String: Any]
            #expect(removal?["objectId"] as? String == id)
            #expect(removal?["uniqueKey"] as? String == TestActors.joao.key)
            #expect(removal?["reason"] == nil, "the reason stays in the log")
            #expect((events[1]["location"] as? [String: Any])?["mapString"] as? String == "Porto")
        }
    }
}

extension ProcessTests {
    @Test func aHiddenPinLeavesTheRunningServicesListAtOnceAndAnUnhideBringsItBackAsItWas() async throws {
        try await withLiveService { client, database in
            let id = try await client.post(as: TestActors.jarrod, mapString: "Lagos, Nigeria")
            let other = try await client.post(as: TestActors.amara)
            let before = try await client.list()
            #expect(Set(before.compactMap { $0["objectId"] as? String }) == [other, id])

            // The command runs in a process of its own; the service hears of it as of any append.
            let hidden = try await ModerationTests.moderate(["hide", id, "--reason", "spam link", "--operator", "ops"], on: database)
            #expect(hidden.status == 0)
            #expect(hidden.output == "hid pin \(id) of \(TestActors.jarrod.key): spam link\n")
            let gone = try await waitFor(within: .seconds(1)) { try await client.list().compactMap { $0["objectId"] as? String } == [other] }
            #expect(gone != nil, "the hidden pin was still in the service's list a second after the command")
            let one = try await client.send(.get, "/v1/StudentLocation/\(id)")
            #expect(one.status == .notFound)
            // Not the owner's to change while hidden: as for a pin that is not there.
            let moved = try await client.send(.put, "/v1/StudentLocation/\(id)", as: TestActors.jarrod, body: #"{"mapString":"Abuja"}"#)
            #expect(moved.status == .notFound)
            #expect(moved.body == #"{"code":101,"error":"Object not found."}"#)
            let deleted = try await client.send(.delete, "/v1/StudentLocation/\(id)", as: TestActors.jarrod)
            #expect(deleted.status == .notFound)
            var verified = try await ModerationTests.verify(database)
            #expect(verified.differenceCount == 0, "\(verified.differences.joined(separator: "\n"))")

            let unhidden = try await ModerationTests.moderate(["unhide", id, "--operator", "ops"], on: database)
            #expect(unhidden.status == 0)
            #expect(unhidden.output == "unhid pin \(id) of \(TestActors.jarrod.key): back on the map\n")
            let back = try await waitFor(within: .seconds(1)) {
                Set(try await client.list().compactMap { $0["objectId"] as? String }) == [other, id]
            }
            #expect(back != nil, "the unhidden pin was not back in the list a second after the command")
            let pin = { (list: [[String: Any]]) in list.first { $0["objectId"] as? String == id } }
            let after = try await client.list()
            #expect(pin(after)?["mapString"] as? String == "Lagos, Nigeria")
            #expect(pin(after)?["updatedAt"] as? String == pin(before)?["updatedAt"] as? String, "it comes back as it was hidden")
            verified = try await ModerationTests.verify(database)
            #expect(verified.differenceCount == 0, "\(verified.differences.joined(separator: "\n"))")
            #expect(verified.pins == 2)

            // The pin's history keeps both, with the operator as actor and the reason given.
            let history = try await database.withClient { client in
                try await client.query(
                    """
                    SELECT event_type, actor_key, coalesce(data->>'reason', '') FROM locations.events
                    WHERE stream_name = \(StreamName(ObjectID(id)).rawValue) ORDER BY stream_version
                    """, logger: TestDatabase.logger
                ).collect().map { try $0.decode((String, String, String).self) }
            }
            #expect(history.map(\.0) == ["LocationPosted", "LocationHidden", "LocationUnhidden"])
            #expect(history.map(\.1) == [TestActors.jarrod.key, "operator:ops", "operator:ops"])
            #expect(history[1].2 == "spam link")
        }
    }
}
