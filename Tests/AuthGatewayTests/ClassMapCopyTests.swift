import Foundation
import HTTPTypes
import HummingbirdTesting
import OnTheMapShared
import TestSupport
import Testing

@testable import AuthGateway

/// The gateway's copy of class maps' lists (`ClassMapLists`), with a real locations-service and PostgreSQL
/// behind it: a map's list is answered before the router, to whoever the service said may have it, and a
/// change to the map made anywhere (another replica included) shows at once.
@Suite struct ClassMapCopyTests {
    /// Whether one read of `path` was answered from the gateway's copy (before the router), and its body.
    static func readFromCopy(_ client: any TestClientProtocol, _ path: String, headers: [HTTPField] = []) async throws -> (Bool, Reply) {
        let before = try await answeredByDoor(client)
        let reply = try await client.send(.get, path, headers: headers)
        let after = try await answeredByDoor(client)
        return (after["prepared", default: 0] - before["prepared", default: 0] == 1, reply)
    }

    /// How long a change may take to reach the copy: at once here, but on a cluster shared with other tests
    /// their open transactions can hold back what the class maps' feed may read for seconds.
    static let feedLimit = Duration.seconds(30)

    static let pin = #"{"mapString":"Quito","mediaURL":"https://example.com","latitude":-0.18,"longitude":-78.47}"#

    @Test func aPublicMapsListComesFromTheCopyAndAChangeOnAnotherReplicaShowsAtOnce() async throws {
        try await withGateway { client, fixture in
            let teacher = try await client.signedUpAndLoggedIn("copy-t@example.com")
            let student = try await client.signedUpAndLoggedIn("copy-s@example.com")
            _ = try await ClassMapTests.classMap(client, "copy-pub", teacher: teacher, students: [student], read: "public")
            let path = "/maps/copy-pub/v1/StudentLocation"
            #expect(try await client.send(.post, path, body: Self.pin, headers: [student.bearer]).status == .ok)
            // The first read fetches the list; from then on anyone is answered from the copy, the same bytes.
            let fetched = try await client.send(.get, path)
            #expect(fetched.status == .ok)
            #expect(fetched.headers[.cacheControl] == nil)
            #expect(fetched.body.contains("Quito"))
            let fromCopy = try await waitFor(within: Self.feedLimit) {
                let (copied, reply) = try await Self.readFromCopy(client, path)
                return copied && reply.body == fetched.body
            }
            #expect(fromCopy != nil, "a public map's list is answered from the gateway's copy")
            // The legacy path is the same list, from the same copy. The feed may still bring events older than
            // the copy (held back by other tests' transactions) and drop it once more: then the next read
            // fetches it again, so this waits as the read above did.
            let legacyFromCopy = try await waitFor(within: Self.feedLimit) {
                let (copied, legacy) = try await Self.readFromCopy(client, "/maps/copy-pub/parse/classes/StudentLocation", headers: [teacher.bearer])
                return copied && legacy.body == fetched.body
            }
            #expect(legacyFromCopy != nil, "the legacy path's list is the same copy")
            // A pin posted through another replica reaches this one through the class maps' feed alone.
            try await withSecondReplica(of: fixture) { other in
                let elsewhere = try await other.logIn(student)
                let reply = try await other.send(
                    .post, path, body: Self.pin.replacingOccurrences(of: "Quito", with: "Cuenca"), headers: [elsewhere.bearer])
                #expect(reply.status == .ok)
            }
            let shown = try await waitFor(within: Self.feedLimit) { try await client.send(.get, path).body.contains("Cuenca") }
            #expect(shown != nil, "a change made on another replica shows in this one's copy")
            // Another map's change leaves this map's copy alone.
            _ = try await ClassMapTests.classMap(client, "copy-other", teacher: teacher, students: [student], read: "public")
            #expect(try await client.send(.post, "/maps/copy-other/v1/StudentLocation", body: Self.pin, headers: [student.bearer]).status == .ok)
            let stillCopied = try await waitFor(within: Self.feedLimit) { try await Self.readFromCopy(client, path).0 }
            #expect(stillCopied != nil)
        }
    }

    @Test func aMembersOnlyMapsCopyIsForTheMembersItWasGivenToAndLeavesWithARemovedOne() async throws {
        try await withGateway { client, fixture in
            let teacher = try await client.signedUpAndLoggedIn("copy-t2@example.com")
            let member = try await client.signedUpAndLoggedIn("copy-m2@example.com")
            let outsider = try await client.signedUpAndLoggedIn("copy-o2@example.com")
            _ = try await ClassMapTests.classMap(client, "copy-private", teacher: teacher, students: [member])
            let path = "/maps/copy-private/v1/StudentLocation"
            #expect(try await client.send(.post, path, body: Self.pin, headers: [member.bearer]).status == .ok)
            let fetched = try await client.send(.get, path, headers: [member.bearer])
            #expect(fetched.status == .ok)
            // No cache shared with others may keep a members-only map's pins.
            #expect(fetched.headers[.cacheControl] == "private")
            let fromCopy = try await waitFor(within: Self.feedLimit) { try await Self.readFromCopy(client, path, headers: [member.bearer]).0 }
            #expect(fromCopy != nil, "a member's second read is answered from the copy")
            // Held for the member, the list is still nobody else's: not an outsider's, not an anonymous caller's.
            for headers in [[], [outsider.bearer], [HTTPField(name: .authorization, value: "Bearer not-a-session")]] {
                let reply = try await client.send(.get, path, headers: headers)
                #expect(reply.status == .notFound, "\(headers): \(reply.status)")
                #expect(!reply.body.contains("Quito"))
            }
            // The teacher removes the member through another replica: this one hears it from the feed, and the
            // removed member finds nothing here from then on.
            try await withSecondReplica(of: fixture) { other in
                let teacherThere = try await other.logIn(teacher)
                let removed = try await other.send(.delete, "/v1/maps/copy-private/members/\(member.key)", headers: [teacherThere.bearer])
                #expect(removed.status == .ok, "\(removed.body)")
            }
            let gone = try await waitFor(within: Self.feedLimit) { try await client.send(.get, path, headers: [member.bearer]).status == .notFound }
            #expect(gone != nil, "a removed member is refused by every replica")
            for _ in 0..<3 { #expect(try await client.send(.get, path, headers: [member.bearer]).status == .notFound) }
            // Opened to the public through the other replica, the map is anyone's here too.
            try await withSecondReplica(of: fixture) { other in
                let teacherThere = try await other.logIn(teacher)
                let opened = try await other.send(.patch, "/v1/maps/copy-private", body: #"{"read":"public"}"#, headers: [teacherThere.bearer])
                #expect(opened.status == .ok, "\(opened.body)")
            }
            let open = try await waitFor(within: Self.feedLimit) { try await client.send(.get, path).status == .ok }
            #expect(open != nil)
            #expect(try await client.send(.get, path).headers[.cacheControl] == nil)
        }
    }
}
