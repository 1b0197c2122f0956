import Foundation
import HTTPTypes
import HummingbirdTesting
import OnTheMapShared
import TestSupport
import Testing

@testable import LocationsService

/// The StudentLocation routes answer byte for byte in the shapes existing clients decode.
@Suite struct ContractTests {
    static let timestamp = #"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"#

    @Test func postAnswersWithCreatedAtObjectIdAndTheMisspelledCreateAt() async throws {
        try await withRouter { client, _ in
            let reply = try await client.send(
                .post, "/v1/StudentLocation", as: TestActors.jarrod,
                body: """
                    {"uniqueKey":"1234","firstName":"John","lastName":"Doe","mapString":"Mountain View, CA","mediaURL":"https://udacity.com","latitude":37.386052,"longitude":-122.083851}
                    """)
            #expect(reply.status == .ok)
            #expect(reply.headers[.contentType] == "application/json")
            let pattern = try Regex(#"^\{"createdAt":"(\#(Self.timestamp))","objectId":"([A-Za-z0-9]{10})","createAt":"(\#(Self.timestamp))"\}$"#)
            let match = try #require(reply.body.wholeMatch(of: pattern))
            #expect(match.output[1].substring == match.output[3].substring)
        }
    }

    @Test func listItemsCarryAllTenFieldsInContractOrderWithIdentityFromTheActor() async throws {
        try await withRouter { client, _ in
            let post = try await client.send(
                .post, "/v1/StudentLocation", as: TestActors.jarrod,
                body: """
                    {"uniqueKey":"random-client-key","firstName":"Someone","lastName":"Else","mapString":"Huntsville, Alabama","mediaURL":"https://www.linkedin.com/in/jarrodparkes","latitude":34.7303688,"longitude":-86.5861037,"createdAt":"","objectID":"","extra":{"nested":[1,2]}}
                    """)
            let objectId = try #require(post.json["objectId"] as? String)
            let createdAt = try #require(post.json["createdAt"] as? String)
            let reply = try await client.send(.get, "/v1/StudentLocation")
            #expect(reply.status == .ok)
            #expect(
                reply.body == """
                    {"results":[{"objectId":"\(objectId)","uniqueKey":"3903878747","firstName":"Jarrod","lastName":"Parkes","mapString":"Huntsville, Alabama","mediaURL":"https://www.linkedin.com/in/jarrodparkes","latitude":34.7303688,"longitude":-86.5861037,"createdAt":"\(createdAt)","updatedAt":"\(createdAt)"}]}
                    """)
        }
    }

    @Test func getOneAnswersThePinWithItsVersionAsETag() async throws {
        try await withRouter { client, _ in
            let id = try await client.post(as: TestActors.amara, mapString: "Lagos, Nigeria", latitude: 6.45407, longitude: 3.39467)
            let reply = try await client.send(.get, "/v1/StudentLocation/\(id)")
            #expect(reply.status == .ok)
            #expect(reply.headers[.eTag] == "\"1\"")
            #expect(
                reply.body.hasPrefix(
                    #"{"objectId":"\#(id)","uniqueKey":"5550001111","firstName":"Amara","lastName":"Nwosu","mapString":"Lagos, Nigeria","mediaURL":"https://udacity.com","latitude":6.45407,"longitude":3.39467,"createdAt":""#
                ))
        }
    }

    @Test func putAnswersUpdatedAtPlusObjectIdAndCreateAt() async throws {
        try await withRouter { client, _ in
            let post = try await client.send(
                .post, "/v1/StudentLocation", as: TestActors.jarrod,
                body: """
                    {"mapString":"Huntsville, Alabama","mediaURL":"https://udacity.com","latitude":34.73,"longitude":-86.58}
                    """)
            let id = try #require(post.json["objectId"] as? String)
            let createdAt = try #require(post.json["createdAt"] as? String)
            let reply = try await client.send(
                .put, "/v1/StudentLocation/\(id)", as: TestActors.jarrod,
                body: """
                    {"uniqueKey":"1234","firstName":"John","lastName":"Doe","mapString":"Patiala, Punjab","mediaURL":"https://udacity.com/course","latitude":30.3398,"longitude":76.3869}
                    """)
            #expect(reply.status == .ok)
            let pattern = try Regex(#"^\{"updatedAt":"\#(Self.timestamp)","objectId":"\#(id)","createAt":"\#(createdAt)"\}$"#)
            #expect(reply.body.wholeMatch(of: pattern) != nil, "\(reply.body)")
            let pin = try await client.send(.get, "/v1/StudentLocation/\(id)")
            #expect(pin.json["mapString"] as? String == "Patiala, Punjab")
            #expect(pin.json["latitude"] as? Double == 30.3398)
            #expect(pin.json["firstName"] as? String == "Jarrod")
            #expect(pin.headers[.eTag] == "\"2\"")
        }
    }

    @Test func deleteAnswersAnEmptyObjectAndThePinIsGone() async throws {
        try await withRouter { client, _ in
            let id = try await client.post(as: TestActors.jarrod)
            let reply = try await client.send(.delete, "/v1/StudentLocation/\(id)", as: TestActors.jarrod)
            #expect(reply.status == .ok)
            #expect(reply.body == "{}")
            #expect(try await client.list().isEmpty)
            let gone = try await client.send(.get, "/v1/StudentLocation/\(id)")
            #expect(gone.status == .notFound)
        }
    }

    @Test func unknownObjectIdIs404WithParseCode101() async throws {
        try await withRouter { client, _ in
            for method in [HTTPRequest.Method.get, .put, .delete] {
                let reply = try await client.send(
                    method, "/v1/StudentLocation/NoSuchPin1", as: TestActors.jarrod,
                    body: method == .put ? #"{"mapString":"x"}"# : nil)
                #expect(reply.status == .notFound)
                #expect(reply.body == #"{"code":101,"error":"Object not found."}"#)
            }
        }
    }

    @Test func listHonoursLimitSkipAndOrderAndToleratesUnknownOrderKeys() async throws {
        try await withLiveService { client, _ in
            // A new pin's `updatedAt` is its `createdAt`. Posts within one millisecond share it; the object id
            // then decides, in the same direction. The expected order is worked out from what the posts
            // answered, not from their timing.
            var posted: [(objectId: String, createdAt: String)] = []
            for index in 0..<5 {
                posted.append(try await client.posted(as: TestActors.student(index), mapString: "Place \(index)"))
            }
            let ids = posted.sorted { ($0.createdAt, $0.objectId) < ($1.createdAt, $1.objectId) }.map(\.objectId)
            let newestFirst = Array(ids.reversed())
            #expect(try await client.list().map { $0["objectId"] as! String } == newestFirst)
            #expect(try await client.list("?limit=2&skip=1&order=-updatedAt").map { $0["objectId"] as! String } == Array(newestFirst[1...2]))
            #expect(try await client.list("?order=updatedAt").map { $0["objectId"] as! String } == ids)
            #expect(try await client.list("?order=-updateAt&limit=100").map { $0["objectId"] as! String } == newestFirst)
            #expect(
                try await client.list("?order=-bogus,mapString").map { $0["mapString"] as! String }
                    == (0..<5).map { "Place \($0)" })
            #expect(try await client.list("?limit=0").isEmpty)
        }
    }

    @Test func filtersByUniqueKeyAndByParseWhereJSONEvenWithSpaces() async throws {
        try await withLiveService { client, _ in
            let mine = try await client.post(as: TestActors.jarrod)
            _ = try await client.post(as: TestActors.amara)
            for query in [
                "?uniqueKey=3903878747",
                "?where=%7B%22uniqueKey%22%3A%223903878747%22%7D",
                "?where=%7B%20%22uniqueKey%22%20%3A%20%223903878747%22%20%7D",
                "?where=%7B%22uniqueKey%22:+%223903878747%22%7D",
            ] {
                let results = try await client.list(query)
                #expect(results.map { $0["objectId"] as! String } == [mine], "\(query)")
            }
        }
    }

    /// Above the store: which events a follower may read, and when, is the log's rule (LocationLogContractTests
    /// holds both logs to it), so the service's router over the memory log answers here.
    @Test func changesWithoutEventsOnlyMoveTheCursorToTheHead() async throws {
        try await withRouter { client, _ in
            let start = try await client.send(.get, "/v1/StudentLocation/changes?after=now&events=false")
            let before = try #require(start.json["cursor"] as? String)
            #expect(start.body == #"{"events":[],"cursor":"\#(before)"}"#)
            let posted = [try await client.post(as: TestActors.jarrod), try await client.post(as: TestActors.amara)]
            // An event becomes readable only once no earlier transaction anywhere in the cluster can still
            // commit, so either read may first see one post and then the other: each follows until both.
            var events: [[String: Any]] = []
            var cursor = before
            while events.count < posted.count {
                let page = try await client.send(.get, "/v1/StudentLocation/changes?after=\(cursor)&wait=5")
                let more = try #require(page.json["events"] as? [[String: Any]])
                try #require(!more.isEmpty, "no new event within 5 s")
                events += more
                cursor = try #require(page.json["cursor"] as? String)
            }
            #expect(events.map { ($0["location"] as? [String: Any])?["objectId"] as? String } == posted)
            #expect(events.last?["id"] as? String == cursor)
            // Without events, the cursor alone moves, and it stops exactly where the two posts end.
            var head = before
            while head != cursor {
                let moved = try await client.send(.get, "/v1/StudentLocation/changes?after=\(head)&wait=5&events=false")
                let next = try #require(moved.json["cursor"] as? String)
                #expect(moved.body == #"{"events":[],"cursor":"\#(next)"}"#)
                try #require(next != head, "the head did not move within 5 s")
                head = next
            }
            let still = try await client.send(.get, "/v1/StudentLocation/changes?after=\(head)&wait=1&events=false")
            #expect(still.body == #"{"events":[],"cursor":"\#(head)"}"#)

            let odd = try await client.send(.get, "/v1/StudentLocation/changes?after=now&events=maybe")
            #expect(odd.status == .badRequest)
            #expect(odd.body == #"{"code":102,"error":"events must be true or false."}"#)
        }
    }
}
