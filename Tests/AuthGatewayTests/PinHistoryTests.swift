import Foundation
import HTTPTypes
import HummingbirdTesting
import OnTheMapShared
import TestSupport
import Testing

@testable import AuthGateway
@testable import ServiceTwins

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
        try await withGatewaySocket { client, _ in
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
            #expect(try await HiddenPinTests.moderate(["hide", id, "--reason", "spam link"], on: fixture).status == 0)
            let hidden = try await Self.history(client, id)
            #expect(hidden.status == .notFound && hidden.body == #"{"code":101,"error":"Object not found."}"#, "\(hidden.body)")
            #expect(try await HiddenPinTests.moderate(["unhide", id], on: fixture).status == 0)
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

    /// `?at=` through the gateway, at the moments a pin's history names: the list (and the GeoJSON feed) as it
    /// was then, nothing before the first event, and a Parse-style 400 for a malformed or future time.
    @Test func theListAtTheMomentsOfAPinsHistoryShowsTheMapAsItWasThen() async throws {
        try await withGatewaySocket { client, _ in
            let student = try await client.signedUpAndLoggedIn("at@example.com", firstName: "Ada", lastName: "Yonath")
            let id = try await client.postPin(as: student, mapString: "Lima, Peru")
            let moved = try await client.send(
                .put, "/v1/StudentLocation/\(id)", body: #"{"mapString":"Oslo, Norway","latitude":59.9,"longitude":10.75}"#,
                headers: [student.bearer])
            #expect(moved.status == .ok)
            let other = try await client.postPin(as: student, mapString: "Accra, Ghana")
            #expect(try await client.send(.delete, "/v1/StudentLocation/\(id)", headers: [student.bearer]).status == .ok)
            let moments = try await Self.history(client, id).entries.compactMap { ($0["at"] as? String).flatMap(Timestamp.init(iso8601:)) }
            try #require(moments.count == 3)
            let (posted, movedAt, deleted) = (moments[0], moments[1], moments[2])

            func places(at moment: String, _ path: String = "/v1/StudentLocation") async throws -> [String] {
                let reply = try await client.send(.get, path + "?at=" + moment.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)
                #expect(reply.status == .ok, "\(moment): \(reply.body)")
                return (reply.json["results"] as? [[String: Any]] ?? []).compactMap { $0["mapString"] as? String }
            }
            let before = try await client.send(
                .get, "/v1/StudentLocation?at=" + Timestamp(millisecondsSince1970: posted.millisecondsSince1970 - 1).iso8601)
            #expect(before.status == .ok && before.body == #"{"results":[]}"#, "\(before.body)")
            #expect(try await places(at: posted.iso8601) == ["Lima, Peru"])
            #expect(try await places(at: Timestamp(millisecondsSince1970: movedAt.millisecondsSince1970 - 1).iso8601) == ["Lima, Peru"])
            #expect(try await places(at: movedAt.iso8601) == ["Oslo, Norway"])
            let afterAccra = try await places(at: Timestamp(millisecondsSince1970: deleted.millisecondsSince1970 - 1).iso8601)
            #expect(afterAccra == ["Accra, Ghana", "Oslo, Norway"])
            #expect(try await places(at: deleted.iso8601) == ["Accra, Ghana"])
            // The same moment with an offset, and with its `+` left unencoded (read as a space).
            let offset = Timestamp(millisecondsSince1970: movedAt.millisecondsSince1970 + 3_600_000).iso8601.dropLast() + "+01:00"
            #expect(try await places(at: String(offset)) == ["Oslo, Norway"])
            let unencoded = try await client.send(.get, "/v1/StudentLocation?at=\(offset)")
            #expect(
                (unencoded.json["results"] as? [[String: Any]])?.compactMap { $0["mapString"] as? String } == ["Oslo, Norway"], "\(unencoded.body)")
            // The other query parameters apply at that moment too, and the GeoJSON feed takes it.
            let nobodys = try await client.send(.get, "/v1/StudentLocation?uniqueKey=nobody&at=" + movedAt.iso8601)
            #expect(nobodys.status == .ok && nobodys.body == #"{"results":[]}"#, "\(nobodys.body)")
            let feed = try await client.send(.get, "/v1/StudentLocation.geojson?at=" + movedAt.iso8601)
            let points = (feed.json["features"] as? [[String: Any]])?.compactMap { ($0["geometry"] as? [String: Any])?["coordinates"] as? [Double] }
            #expect(points == [[10.75, 59.9]], "\(feed.body)")
            #expect(feed.headers[.contentType] == "application/geo+json")
            // Now, the list as it is.
            let now = try await client.send(.get, "/v1/StudentLocation?at=" + Timestamp.now().iso8601)
            #expect((now.json["results"] as? [[String: Any]])?.compactMap { $0["objectId"] as? String } == [other])

            for (bad, message) in [
                ("yesterday", "at must be a time in ISO 8601, such as 2026-11-26T09:30:00Z."),
                ("2026-13-45T99:00:00Z", "at must be a time in ISO 8601, such as 2026-11-26T09:30:00Z."),
                ("2999-01-01T00:00:00Z", "at must not be in the future"),
            ] {
                let reply = try await client.send(.get, "/v1/StudentLocation?at=" + bad)
                #expect(reply.status == .badRequest && reply.json["code"] as? Int == 102, "\(bad): \(reply.body)")
                #expect((reply.json["error"] as? String)?.hasPrefix(message) == true, "\(bad): \(reply.body)")
            }
        }
    }
}
