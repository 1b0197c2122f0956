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
    static func moderate(_ arguments: [String], on fixture: GatewayFixture) throws -> (status: Int32, output: String) {
        try ServiceProcess.command(
            "locations-service", ["moderate"] + arguments + ["--operator", "ops"],
            environment: ["DATABASE_URL": fixture.database.url, "LOG_LEVEL": "warning"])
    }

    /// The next event of `type` on the stream, skipping others (changes from before it opened may still come).
    static func next(_ type: String, on stream: LiveStreamTests.EventReader) async throws -> [String: String] {
        while true {
            let event = try await stream.next(within: .seconds(1))
            if event["event"] == type { return event }
        }
    }

    static func listed(_ client: any TestClientProtocol) async throws -> Set<String> {
        let list = try await client.send(.get, "/v1/StudentLocation?limit=100&order=-updatedAt")
        return Set((list.json["results"] as? [[String: Any]] ?? []).compactMap { $0["objectId"] as? String })
    }

    @Test func aHiddenPinVanishesFromEveryOpenStreamAndTheListWithinASecondAndAnUnhideBringsItBack() async throws {
        try await withGateway { client, fixture in
            let student = try await client.signedUpAndLoggedIn("hidden@example.com")
            let kept = try await client.postPin(as: student, mapString: "Accra, Ghana")
            let id = try await client.postPin(as: student, mapString: "Lagos, Nigeria")
            #expect(try await Self.listed(client) == [id, kept] as Set)
            let browsers = [try await LiveStreamTests.open(client.port!), try await LiveStreamTests.open(client.port!)]

            let hide = try Self.moderate(["hide", id, "--reason", "spam link"], on: fixture)
            #expect(hide.status == 0, "\(hide.output)")
            let hidden = ContinuousClock.now
            for browser in browsers {
                let removal = try await Self.next("LocationHidden", on: browser)
                #expect(removal["data"]?.hasPrefix("{\"objectId\":\"\(id)\",\"uniqueKey\":\"\(student.key)\"") == true)
                #expect(removal["data"]?.contains("spam") == false, "the reason stays in the log")
            }
            let gone = try await waitFor(within: .seconds(1)) { try await Self.listed(client) == [kept] as Set }
            #expect(gone != nil, "the hidden pin was still listed a second after the command")
            #expect(ContinuousClock.now - hidden < .seconds(1))
            let moved = try await client.send(.put, "/v1/StudentLocation/\(id)", body: #"{"mapString":"Abuja"}"#, headers: [student.bearer])
            #expect(moved.status == .notFound)
            #expect(moved.body == #"{"code":101,"error":"Object not found."}"#)

            let unhide = try Self.moderate(["unhide", id], on: fixture)
            #expect(unhide.status == 0, "\(unhide.output)")
            let unhidden = ContinuousClock.now
            for browser in browsers {
                let pin = try await Self.next("LocationUnhidden", on: browser)
                #expect(pin["data"]?.contains("\"mapString\":\"Lagos, Nigeria\"") == true)
            }
            let back = try await waitFor(within: .seconds(1)) { try await Self.listed(client) == [id, kept] as Set }
            #expect(back != nil, "the unhidden pin was not listed again a second after the command")
            #expect(ContinuousClock.now - unhidden < .seconds(1))
        }
    }
}
