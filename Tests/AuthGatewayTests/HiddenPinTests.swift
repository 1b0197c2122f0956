import Foundation
import HTTPTypes
import HummingbirdTesting
import OnTheMapShared
import TestSupport
import Testing

@testable import AuthGateway

/// A pin an operator hides (`locations-service moderate hide`) leaves every open map and the list, and
/// comes back when unhidden.
@Suite struct HiddenPinTests {
    static func moderate(_ arguments: [String], on fixture: GatewayFixture) async throws -> (status: Int32, output: String) {
        try await ServiceProcess.command(
            "locations-service", ["moderate"] + arguments + ["--operator", "ops"],
            environment: ["DATABASE_URL": fixture.database.url, "LOG_LEVEL": "warning"])
    }

    /// The next event of `type` on the stream, skipping others (changes from before it opened may still come).
    /// Up to 5 s each, as in `resumed`: this suite runs beside the others and asserts that the event comes,
    /// not how soon (a hide reaching every open stream within 1 s is TimedGatewayTests', run alone).
    static func next(_ type: String, on stream: LiveStreamTests.EventReader) async throws -> [String: String] {
        while true {
            let event = try await stream.next(within: .seconds(5))
            if event["event"] == type { return event }
        }
    }

    static func listed(_ client: any TestClientProtocol) async throws -> Set<String> {
        let list = try await client.send(.get, "/v1/StudentLocation?limit=100&order=-updatedAt")
        return Set((list.json["results"] as? [[String: Any]] ?? []).compactMap { $0["objectId"] as? String })
    }

    /// Every read of the map as a client can ask it: now, at `moment` (`?at=`), the pin itself and its
    /// history, as the answers' bodies.
    static func everyRead(of id: String, at moment: Timestamp, _ client: any TestClientProtocol) async throws -> [String: String] {
        var answers: [String: String] = [:]
        for path in ["/v1/StudentLocation?limit=100", "/v1/StudentLocation.geojson"] {
            answers[path] = try await client.send(.get, path).body
            let past = path + (path.contains("?") ? "&" : "?") + "at=" + moment.iso8601
            answers[past] = try await client.send(.get, past).body
        }
        for path in ["/v1/StudentLocation/\(id)", "/v1/StudentLocation/\(id)/history"] {
            answers[path] = try await client.send(.get, path).body
        }
        return answers
    }

    /// The frames a stream resumed after `cursor` sends up to and including the event with id `last`.
    static func resumed(_ port: Int, after cursor: String, through last: String) async throws -> [[String: String]] {
        let stream = try await LiveStreamTests.open(port, lastEventID: cursor)
        var frames: [[String: String]] = []
        while frames.last?["id"] != last { frames.append(try await stream.next(within: .seconds(5))) }
        return frames
    }

    @Test func aHiddenPinIsReadNowhereAtAnyMomentAndAnUnhideBringsItBackEverywhere() async throws {
        try await withGateway { client, fixture in
            let student = try await client.signedUpAndLoggedIn("address@example.com")
            let watching = try await LiveStreamTests.open(client.port!)
            let secret = "12 Secret Lane, Lagos"
            _ = try await client.postPin(as: student, mapString: "Accra, Ghana")
            let id = try await client.postPin(as: student, mapString: secret)
            let posted = try await Self.next("LocationPosted", on: watching)
            let shown = try await Self.next("LocationPosted", on: watching)
            #expect(shown["data"]?.contains(secret) == true)
            let beforeHide = try #require(shown["id"])
            let firstID = try #require(posted["id"])
            let existed = Timestamp.now()
            #expect(try await Self.everyRead(of: id, at: existed, client).values.contains { $0.contains(secret) })

            #expect(try await Self.moderate(["hide", id, "--reason", "a home address"], on: fixture).status == 0)
            let hide = try #require(try await Self.next("LocationHidden", on: watching)["id"])
            #expect(try await waitFor(within: .seconds(2)) { try await !Self.listed(client).contains(id) } != nil)
            for (route, body) in try await Self.everyRead(of: id, at: existed, client) {
                #expect(!body.contains(secret), "\(route) still shows the hidden pin: \(body)")
            }
            for cursor in ["0-0", beforeHide] {
                let frames = try await Self.resumed(client.port!, after: cursor, through: hide)
                #expect(!frames.contains { $0["data"]?.contains(secret) == true }, "resumed after \(cursor): \(frames)")
                #expect(frames.last?["event"] == "LocationHidden")
            }
            #expect(try await Self.resumed(client.port!, after: "0-0", through: hide).first?["id"] == firstID)

            #expect(try await Self.moderate(["unhide", id], on: fixture).status == 0)
            let unhide = try #require(try await Self.next("LocationUnhidden", on: watching)["id"])
            #expect(try await waitFor(within: .seconds(2)) { try await Self.listed(client).contains(id) } != nil)
            // Its history too: the post's entry carries the pin as posted.
            for (route, body) in try await Self.everyRead(of: id, at: existed, client) {
                #expect(body.contains(secret), "\(route) does not show the unhidden pin: \(body)")
            }
            let again = try await Self.resumed(client.port!, after: "0-0", through: unhide)
            #expect(again.contains { $0["event"] == "LocationPosted" && $0["data"]?.contains(secret) == true }, "\(again)")
        }
    }

    /// An unhidden pin comes back as it was hidden, `updatedAt` and all: it takes its old place in the
    /// newest-first list, not the top, since its owner changed nothing.
    @Test func anUnhiddenPinTakesItsOldPlaceInTheList() async throws {
        try await withGateway { client, fixture in
            let student = try await client.signedUpAndLoggedIn("order@example.com")
            let older = try await client.postPin(as: student, mapString: "Older")
            let newer = try await client.postPin(as: student, mapString: "Newer")
            let before = try await client.pins()
            #expect(before.compactMap { $0["objectId"] as? String } == [newer, older])
            #expect(try await Self.moderate(["hide", older, "--reason", "spam"], on: fixture).status == 0)
            #expect(try await Self.moderate(["unhide", older], on: fixture).status == 0)
            var after: [[String: Any]] = []
            let back = try await waitFor(within: .seconds(2)) {
                after = try await client.pins()
                return after.count == 2
            }
            #expect(back != nil, "the unhidden pin was not listed again")
            #expect(after.compactMap { $0["objectId"] as? String } == [newer, older])
            #expect(after.last?["updatedAt"] as? String == before.last?["updatedAt"] as? String)
        }
    }
}

extension TimedGatewayTests {
    @Test func aHiddenPinVanishesFromEveryOpenStreamAndTheListWithinASecondAndAnUnhideBringsItBack() async throws {
        try await withGateway { client, fixture in
            let student = try await client.signedUpAndLoggedIn("hidden@example.com")
            let kept = try await client.postPin(as: student, mapString: "Accra, Ghana")
            let id = try await client.postPin(as: student, mapString: "Lagos, Nigeria")
            #expect(try await HiddenPinTests.listed(client) == [id, kept] as Set)
            let browsers = [try await LiveStreamTests.open(client.port!), try await LiveStreamTests.open(client.port!)]

            let hide = try await HiddenPinTests.moderate(["hide", id, "--reason", "spam link"], on: fixture)
            #expect(hide.status == 0, "\(hide.output)")
            let hidden = ContinuousClock.now
            for browser in browsers {
                let removal = try await HiddenPinTests.next("LocationHidden", on: browser)
                #expect(removal["data"]?.hasPrefix("{\"objectId\":\"\(id)\",\"uniqueKey\":\"\(student.key)\"") == true)
                #expect(removal["data"]?.contains("spam") == false, "the reason stays in the log")
            }
            let gone = try await waitFor(within: .seconds(1)) { try await HiddenPinTests.listed(client) == [kept] as Set }
            #expect(gone != nil, "the hidden pin was still listed a second after the command")
            #expect(ContinuousClock.now - hidden < .seconds(1))
            let moved = try await client.send(.put, "/v1/StudentLocation/\(id)", body: #"{"mapString":"Abuja"}"#, headers: [student.bearer])
            #expect(moved.status == .notFound)
            #expect(moved.body == #"{"code":101,"error":"Object not found."}"#)

            let unhide = try await HiddenPinTests.moderate(["unhide", id], on: fixture)
            #expect(unhide.status == 0, "\(unhide.output)")
            let unhidden = ContinuousClock.now
            for browser in browsers {
                let pin = try await HiddenPinTests.next("LocationUnhidden", on: browser)
                #expect(pin["data"]?.contains("\"mapString\":\"Lagos, Nigeria\"") == true)
            }
            let back = try await waitFor(within: .seconds(1)) { try await HiddenPinTests.listed(client) == [id, kept] as Set }
            #expect(back != nil, "the unhidden pin was not listed again a second after the command")
            #expect(ContinuousClock.now - unhidden < .seconds(1))
        }
    }
}
