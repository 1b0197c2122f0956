import Foundation
import HTTPTypes
import HummingbirdTesting
import OnTheMapShared
import TestSupport
import Testing

@testable import LocationsService

/// Every role against every route of a class map, on a members-only map and on a public one: who reads,
/// who posts, who changes whose pins, who moderates and who runs the map, and what everyone else is told.
@Suite struct MapRoleMatrixTests {
    enum Role: String, CaseIterable {
        case anonymous, outsider, pending, member, moderator, owner
    }

    static let actors: [Role: Actor] = [
        .outsider: Actor(key: "matrix-outsider", firstName: "Olu", lastName: "Outside"),
        .pending: Actor(key: "matrix-pending", firstName: "Pat", lastName: "Waiting"),
        .member: Actor(key: "matrix-member", firstName: "Mia", lastName: "Member"),
        .moderator: Actor(key: "matrix-moderator", firstName: "Mo", lastName: "Derator"),
        .owner: Actor(key: "matrix-owner", firstName: "Ola", lastName: "Owner"),
    ]

    /// A map `slug` with one account in each role, and a pin of the member's; answers the pin's id.
    static func populated(_ client: any TestClientProtocol, _ slug: String, read: String) async throws -> String {
        let owner = actors[.owner]!
        let created = try await client.send(
            .post, "/v1/maps", as: owner, body: #"{"slug":"\#(slug)","name":"Matrix","read":"\#(read)","post":"members","approval":true}"#)
        #expect(created.status == .created)
        let code = try #require(try await client.send(.post, "/v1/maps/\(slug)/invites", as: owner).json["code"] as? String)
        for role in [Role.pending, .member, .moderator] {
            let joined = try await client.send(.post, "/v1/maps/\(slug)/members", as: actors[role]!, body: #"{"code":"\#(code)"}"#)
            #expect(joined.json["role"] as? String == "pending")
        }
        for (role, granted) in [(Role.member, "member"), (.moderator, "member"), (.moderator, "moderator")] {
            let set = try await client.send(
                .put, "/v1/maps/\(slug)/members/\(actors[role]!.key)/role", as: owner, body: #"{"role":"\#(granted)"}"#)
            #expect(set.json["role"] as? String == granted)
        }
        return try await pin(client, slug)
    }

    static func pin(_ client: any TestClientProtocol, _ slug: String) async throws -> String {
        let posted = try await client.send(
            .post, "/maps/\(slug)/v1/StudentLocation", as: actors[.member]!,
            body: #"{"mapString":"Kumasi","mediaURL":"https://example.com","latitude":6.69,"longitude":-1.62}"#)
        return try #require(posted.json["objectId"] as? String, "\(posted.body)")
    }

    /// What each role is answered on each route, per map setting: the status, by role in `Role.allCases` order.
    struct Expectation: Sendable {
        var name: String
        var members: [Int]
        var `public`: [Int]
        var request: @Sendable (_ client: any TestClientProtocol, _ slug: String, _ pin: String, _ actor: Actor?) async throws -> Reply
    }

    static let body = #"{"mapString":"Tamale","mediaURL":"https://example.com","latitude":9.4,"longitude":-0.85}"#

    static let expectations: [Expectation] = [
        // anonymous, outsider, pending, member, moderator, owner
        Expectation(name: "list", members: [404, 404, 404, 200, 200, 200], public: [200, 200, 200, 200, 200, 200]) { c, s, _, a in
            try await c.send(.get, "/maps/\(s)/v1/StudentLocation", as: a)
        },
        Expectation(name: "list at a moment", members: [404, 404, 404, 200, 200, 200], public: [200, 200, 200, 200, 200, 200]) { c, s, _, a in
            try await c.send(.get, "/maps/\(s)/v1/StudentLocation?at=2020-01-01T00:00:00Z&limit=5", as: a)
        },
        Expectation(name: "one pin", members: [404, 404, 404, 200, 200, 200], public: [200, 200, 200, 200, 200, 200]) { c, s, p, a in
            try await c.send(.get, "/maps/\(s)/v1/StudentLocation/\(p)", as: a)
        },
        Expectation(name: "history", members: [404, 404, 404, 200, 200, 200], public: [200, 200, 200, 200, 200, 200]) { c, s, p, a in
            try await c.send(.get, "/maps/\(s)/v1/StudentLocation/\(p)/history", as: a)
        },
        Expectation(name: "GeoJSON", members: [404, 404, 404, 200, 200, 200], public: [200, 200, 200, 200, 200, 200]) { c, s, _, a in
            try await c.send(.get, "/maps/\(s)/v1/StudentLocation.geojson", as: a)
        },
        Expectation(name: "post", members: [401, 404, 404, 200, 200, 200], public: [401, 403, 403, 200, 200, 200]) { c, s, _, a in
            try await c.send(.post, "/maps/\(s)/v1/StudentLocation", as: a, body: body)
        },
        Expectation(name: "change the member's pin", members: [401, 404, 404, 200, 403, 403], public: [401, 403, 403, 200, 403, 403]) {
            c, s, p, a in
            try await c.send(.put, "/maps/\(s)/v1/StudentLocation/\(p)", as: a, body: #"{"mapString":"Tamale"}"#)
        },
        Expectation(name: "delete the member's pin", members: [401, 404, 404, 200, 403, 403], public: [401, 403, 403, 200, 403, 403]) {
            c, s, _, a in
            try await c.send(.delete, "/maps/\(s)/v1/StudentLocation/\(try await pin(c, s))", as: a)
        },
        Expectation(name: "hide", members: [401, 404, 404, 403, 200, 200], public: [401, 403, 403, 403, 200, 200]) { c, s, _, a in
            try await c.send(.post, "/maps/\(s)/v1/StudentLocation/\(try await pin(c, s))/hide", as: a, body: #"{"reason":"off topic"}"#)
        },
        Expectation(name: "the map", members: [404, 404, 200, 200, 200, 200], public: [200, 200, 200, 200, 200, 200]) { c, s, _, a in
            try await c.send(.get, "/v1/maps/\(s)", as: a)
        },
        Expectation(name: "change the map", members: [401, 404, 404, 403, 403, 200], public: [401, 403, 403, 403, 403, 200]) { c, s, _, a in
            try await c.send(.patch, "/v1/maps/\(s)", as: a, body: #"{"name":"Matrix"}"#)
        },
        Expectation(name: "members", members: [401, 404, 404, 403, 200, 200], public: [401, 403, 403, 403, 200, 200]) { c, s, _, a in
            try await c.send(.get, "/v1/maps/\(s)/members", as: a)
        },
        Expectation(name: "invite", members: [401, 404, 404, 403, 201, 201], public: [401, 403, 403, 403, 201, 201]) { c, s, _, a in
            try await c.send(.post, "/v1/maps/\(s)/invites", as: a)
        },
        Expectation(name: "invites", members: [401, 404, 404, 403, 200, 200], public: [401, 403, 403, 403, 200, 200]) { c, s, _, a in
            try await c.send(.get, "/v1/maps/\(s)/invites", as: a)
        },
        Expectation(name: "hidden pins", members: [401, 404, 404, 403, 200, 200], public: [401, 403, 403, 403, 200, 200]) { c, s, _, a in
            try await c.send(.get, "/v1/maps/\(s)/hidden", as: a)
        },
        Expectation(name: "make the member a moderator", members: [401, 404, 404, 403, 403, 200], public: [401, 403, 403, 403, 403, 200]) {
            c, s, _, a in
            let answer = try await c.send(.put, "/v1/maps/\(s)/members/matrix-member/role", as: a, body: #"{"role":"moderator"}"#)
            if answer.status == .ok {
                _ = try await c.send(.put, "/v1/maps/\(s)/members/matrix-member/role", as: actors[.owner]!, body: #"{"role":"member"}"#)
            }
            return answer
        },
        Expectation(name: "delete the map", members: [401, 404, 404, 403, 403, 403], public: [401, 403, 403, 403, 403, 403]) { c, s, _, a in
            // Only the owner may; tried by everyone else here (the owner's delete is `MapTests`').
            try await c.send(.delete, "/v1/maps/\(s)", as: a?.key == actors[.owner]!.key ? actors[.moderator]! : a)
        },
    ]

    @Test(arguments: ["members", "public"])
    func everyRoleOnEveryRouteOfAMap(read: String) async throws {
        try await withLiveService { client, _ in
            let slug = "matrix-\(read)"
            let pin = try await Self.populated(client, slug, read: read)
            var seen: [String] = []
            var wanted: [String] = []
            for expectation in Self.expectations {
                let statuses = read == "members" ? expectation.members : expectation.public
                for (role, status) in zip(Role.allCases, statuses) {
                    let reply = try await expectation.request(client, slug, pin, Self.actors[role])
                    seen.append("\(expectation.name) as \(role): \(reply.status.code)")
                    wanted.append("\(expectation.name) as \(role): \(status)")
                    if reply.status.code == 404 { #expect(reply.json["code"] as? Int == 101) }
                    if reply.status.code == 403 { #expect(reply.json["code"] as? Int == 119) }
                }
            }
            #expect(seen == wanted)
        }
    }
}
