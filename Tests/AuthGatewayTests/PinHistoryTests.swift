import Foundation
import HTTPTypes
import HummingbirdTesting
import OnTheMapShared
import TestSupport
import Testing

@testable import AuthGateway

/// `GET /v1/StudentLocation/{objectId}/history` through the gateway, over the real log: public, oldest first,
/// each change told against the state before it, a deleted pin's history still readable, a hidden pin's not.
@Suite struct PinHistoryTests {
    static func history(
        _ client: any TestClientProtocol, _ id: String
    ) async throws -> (status: HTTPResponse.Status, body: String, entries: [[String: Any]]) {
        let reply = try await client.send(.get, "/v1/StudentLocation/\(id)/history")
        return (reply.status, reply.body, reply.json["results"] as? [[String: Any]] ?? [])
    }

    @Test func aPinsHistoryTellsItsPostMoveEditAndDeletionInOrderWithWhatChanged() async throws {
        try await withGateway { client, _ in
            let student = try await client.signedUpAndLoggedIn("history@example.com", firstName: "Mae", lastName: "Jemison")
            let id = try await client.postPin(as: student, mapString: "Lima, Peru")
            let moved = try await client.send(
                .put, "/v1/StudentLocation/\(id)", body: #"{"mapString":"Oslo, Norway","latitude":59.9,"longitude":10.75}"#,
                headers: [student.bearer])
            #expect(moved.status == .ok, "\(moved.body)")
            let edited = try await client.send(
                .put, "/v1/StudentLocation/\(id)", body: #"{"mediaURL":"https://example.com/oslo"}"#, headers: [student.bearer])
            #expect(edited.status == .ok, "\(edited.body)")

            // Public: no session asked for, as for the pin itself.
            let (status, body, entries) = try await Self.history(client, id)
            #expect(status == .ok, "\(body)")
            #expect(body.hasPrefix("{\"objectId\":\"\(id)\",\"results\":[{\"event\":\"posted\",\"at\":\""), "\(body)")
            #expect(entries.map { $0["event"] as? String } == ["posted", "moved", "edited"])
            let posted = try #require(entries.first?["location"] as? [String: Any])
            #expect(posted["mapString"] as? String == "Lima, Peru" && posted["firstName"] as? String == "Mae" && posted.count == 10)
            let move = try #require(entries[1]["changes"] as? [String: [String: Any]])
            #expect(Set(move.keys) == ["mapString", "latitude", "longitude"])
            #expect(move["mapString"]?["from"] as? String == "Lima, Peru" && move["mapString"]?["to"] as? String == "Oslo, Norway")
            #expect(move["latitude"]?["from"] as? Double == 37.386052 && move["latitude"]?["to"] as? Double == 59.9)
            #expect(
                body.contains(#"{"event":"moved","#)
                    && body.contains(
                        #""changes":{"mapString":{"from":"Lima, Peru","to":"Oslo, Norway"},"latitude":{"from":37.386052,"to":59.9},"longitude":{"from":-122.083851,"to":10.75}}}"#
                    ), "\(body)")
            let edit = try #require(entries[2]["changes"] as? [String: [String: Any]])
            #expect(Set(edit.keys) == ["mediaURL"] && edit["mediaURL"]?["to"] as? String == "https://example.com/oslo")
            let times = entries.compactMap { ($0["at"] as? String).flatMap(Timestamp.init(iso8601:)) }
            #expect(times.count == 3 && times == times.sorted())

            // Deleted, the pin is gone and its history stays.
            let deleted = try await client.send(.delete, "/v1/StudentLocation/\(id)", headers: [student.bearer])
            #expect(deleted.status == .ok)
            #expect(try await client.send(.get, "/v1/StudentLocation/\(id)").status == .notFound)
            let after = try await Self.history(client, id)
            #expect(after.status == .ok && after.entries.map { $0["event"] as? String } == ["posted", "moved", "edited", "deleted"])
            #expect(after.body.hasPrefix(String(body.dropLast(2))), "the history before the deletion changed")
            #expect(after.entries.last?.count == 2, "a deletion carries its time alone: \(after.body)")
        }
    }

    @Test func aHiddenPinHasNoPublicHistoryUntilItIsUnhiddenAndAnUnknownOneNone() async throws {
        try await withGateway { client, fixture in
            let student = try await client.signedUpAndLoggedIn("hidden-history@example.com")
            let id = try await client.postPin(as: student, mapString: "Accra, Ghana")
            #expect(try HiddenPinTests.moderate(["hide", id, "--reason", "spam link"], on: fixture).status == 0)
            let hidden = try await Self.history(client, id)
            #expect(hidden.status == .notFound && hidden.body == #"{"code":101,"error":"Object not found."}"#, "\(hidden.body)")
            #expect(try HiddenPinTests.moderate(["unhide", id], on: fixture).status == 0)
            let shown = try await Self.history(client, id)
            #expect(shown.entries.map { $0["event"] as? String } == ["posted", "hidden", "unhidden"], "\(shown.body)")
            #expect(!shown.body.contains("spam"), "the operator's reason is not public")
            #expect((shown.entries[2]["changes"] as? [String: Any])?.isEmpty == true)

            for unknown in ["AAAAAAAAAA", "not..an..id"] {
                let reply = try await Self.history(client, unknown)
                #expect(reply.status == .notFound && reply.body == #"{"code":101,"error":"Object not found."}"#, "\(unknown): \(reply.body)")
            }
        }
    }
}
