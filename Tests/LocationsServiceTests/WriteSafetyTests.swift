import HTTPTypes
import HummingbirdTesting
import OnTheMapShared
import TestSupport
import Testing

@testable import LocationsService

/// Retries append nothing twice, and stale writes are refused rather than silently lost.
@Suite struct WriteSafetyTests {
    static let body = #"{"mapString":"Berlin","mediaURL":"https://udacity.com","latitude":52.52,"longitude":13.405}"#

    @Test func retriedPostWithTheSameIdempotencyKeyReturnsTheFirstAnswerAndAppendsNothing() async throws {
        try await withLiveService { client, database in
            let key = HTTPField(name: HTTPField.Name(InternalHeaders.idempotencyKey)!, value: "retry-42")
            let first = try await client.send(.post, "/v1/StudentLocation", as: TestActors.jarrod, body: Self.body, headers: [key])
            let second = try await client.send(.post, "/v1/StudentLocation", as: TestActors.jarrod, body: Self.body, headers: [key])
            #expect(first.status == .ok)
            #expect(second.status == .ok)
            #expect(second.body == first.body)
            #expect(try await eventCount(database) == 1)
            #expect(try await client.list().count == 1)
        }
    }

    @Test func concurrentRetriesStillAppendOnce() async throws {
        try await withLiveService { client, database in
            let key = HTTPField(name: HTTPField.Name(InternalHeaders.idempotencyKey)!, value: "burst")
            let bodies = try await withThrowingTaskGroup(of: String.self) { group in
                for _ in 0..<8 {
                    group.addTask {
                        try await client.send(.post, "/v1/StudentLocation", as: TestActors.jarrod, body: Self.body, headers: [key]).body
                    }
                }
                return try await group.reduce(into: Set<String>()) { $0.insert($1) }
            }
            #expect(bodies.count == 1)
            #expect(try await eventCount(database) == 1)
        }
    }

    @Test func theSameKeyFromAnotherAccountIsADifferentRequest() async throws {
        try await withLiveService { client, database in
            let key = HTTPField(name: HTTPField.Name(InternalHeaders.idempotencyKey)!, value: "shared")
            let mine = try await client.send(.post, "/v1/StudentLocation", as: TestActors.jarrod, body: Self.body, headers: [key])
            let theirs = try await client.send(.post, "/v1/StudentLocation", as: TestActors.amara, body: Self.body, headers: [key])
            #expect(mine.json["objectId"] as? String != theirs.json["objectId"] as? String)
            #expect(try await eventCount(database) == 2)
        }
    }

    @Test func reusingAKeyForADifferentBodyIs422() async throws {
        try await withLiveService { client, database in
            let key = HTTPField(name: HTTPField.Name(InternalHeaders.idempotencyKey)!, value: "k1")
            _ = try await client.send(.post, "/v1/StudentLocation", as: TestActors.jarrod, body: Self.body, headers: [key])
            let other = try await client.send(
                .post, "/v1/StudentLocation", as: TestActors.jarrod,
                body: Self.body.replacingOccurrences(of: "Berlin", with: "Munich"), headers: [key])
            #expect(other.status == .unprocessableContent)
            #expect(other.json["code"] as? Int == 142)
            #expect(try await eventCount(database) == 1)
        }
    }

    @Test func staleIfMatchIs412AndChangesNothing() async throws {
        try await withLiveService { client, database in
            let id = try await client.post(as: TestActors.jarrod)
            let read = try await client.send(.get, "/v1/StudentLocation/\(id)")
            let etag = try #require(read.headers[.eTag])
            let first = try await client.send(
                .put, "/v1/StudentLocation/\(id)", as: TestActors.jarrod,
                body: #"{"mapString":"Berlin"}"#, headers: [HTTPField(name: .ifMatch, value: etag)])
            #expect(first.status == .ok)
            let stale = try await client.send(
                .put, "/v1/StudentLocation/\(id)", as: TestActors.jarrod,
                body: #"{"mapString":"Munich"}"#, headers: [HTTPField(name: .ifMatch, value: etag)])
            #expect(stale.status == .preconditionFailed)
            #expect(stale.json["code"] as? Int == 142)
            let staleDelete = try await client.send(
                .delete, "/v1/StudentLocation/\(id)", as: TestActors.jarrod,
                headers: [HTTPField(name: .ifMatch, value: etag)])
            #expect(staleDelete.status == .preconditionFailed)
            let pin = try await client.send(.get, "/v1/StudentLocation/\(id)")
            #expect(pin.json["mapString"] as? String == "Berlin")
            #expect(pin.headers[.eTag] == "\"2\"")
            #expect(try await eventCount(database) == 2)
        }
    }

    @Test func concurrentUpdatesWithoutIfMatchAllLandInOrder() async throws {
        try await withLiveService { client, database in
            let id = try await client.post(as: TestActors.jarrod)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<10 {
                    group.addTask {
                        let reply = try await client.send(
                            .put, "/v1/StudentLocation/\(id)", as: TestActors.jarrod,
                            body: #"{"mapString":"Place \#(index)"}"#)
                        #expect(reply.status == .ok, "\(reply.body)")
                    }
                }
                try await group.waitForAll()
            }
            let pin = try await client.send(.get, "/v1/StudentLocation/\(id)")
            #expect(pin.headers[.eTag] == "\"11\"")
            #expect(try await eventCount(database) == 11)
        }
    }
}
