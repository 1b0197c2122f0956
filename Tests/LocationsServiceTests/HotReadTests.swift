import HTTPTypes
import HummingbirdTesting
import ServiceKit
import TestSupport
import Testing

@testable import LocationsService

/// The default list is served from memory with an ETag, and a write is visible to the next read.
@Suite struct HotReadTests {
    @Test func latestListCarriesAnETagAndAnswers304WhenUnchanged() async throws {
        try await withRouter { client, _ in
            _ = try await client.post(as: TestActors.jarrod)
            let first = try await client.send(.get, "/v1/StudentLocation?limit=100&order=-updatedAt")
            let etag = try #require(first.headers[.eTag])
            let again = try await client.send(.get, "/v1/StudentLocation", headers: [HTTPField(name: .ifNoneMatch, value: etag)])
            #expect(again.status == .notModified)
            #expect(again.body.isEmpty)
            #expect(again.headers[.eTag] == etag)
        }
    }

    @Test func aWriteIsVisibleToTheVeryNextRead() async throws {
        try await withRouter { client, _ in
            let before = try await client.send(.get, "/v1/StudentLocation")
            let id = try await client.post(as: TestActors.amara)
            let after = try await client.send(
                .get, "/v1/StudentLocation", headers: [HTTPField(name: .ifNoneMatch, value: before.headers[.eTag] ?? "")])
            #expect(after.status == .ok)
            #expect(after.headers[.eTag] != before.headers[.eTag])
            #expect(after.body.contains(id))
            _ = try await client.send(.delete, "/v1/StudentLocation/\(id)", as: TestActors.amara)
            #expect(try await client.list().isEmpty)
        }
    }

    @Test func listsOnlyTheNewestHundred() async throws {
        // A millisecond between posts: pins posted within the same one have no order but their ids'.
        let clock = ManualClock()
        try await withRouter(clock: clock) { client, _ in
            for index in 0..<105 {
                clock.advance(by: .milliseconds(1))
                _ = try await client.post(as: TestActors.student(index), mapString: "Pin \(index)")
            }
            let latest = try await client.list()
            #expect(latest.count == 100)
            #expect(latest.first?["mapString"] as? String == "Pin 104")
            #expect(try await client.list("?limit=1000").count == 105)
        }
    }
}
