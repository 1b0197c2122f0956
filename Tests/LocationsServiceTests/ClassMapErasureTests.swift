import Foundation
import OnTheMapShared
import PostgresNIO
import ServiceKit
import TestSupport
import Testing

@testable import LocationsService

/// Erasure on class maps: a student who made a map, joined, left, was removed and moderated is, once erased,
/// in no member list, no event of any map's life, no moderator's act and none of the tables' files; the map
/// they owned passes to its moderator; everyone else's part of those maps stays; a replay rebuilds the same.
@Suite struct ClassMapErasureTests {
    static let erasable = Actor(key: "erasable-c1a55", firstName: "Ottoline", lastName: "Brackenridge")
    static let teacher = MapTests.teacher
    static let student = MapTests.student
    static let outsider = MapTests.outsider
    /// Strings only the erased student wrote or was named by.
    static let theirs = ["erasable-c1a55", "Ottoline", "Brackenridge", "Quokka Pier"]

    @Test func anErasedStudentLeavesNoTraceOnAnyClassMapAndTheirMapPassesOn() async throws {
        try await withLiveService { client, database in
            func invite(_ slug: String, by actor: Actor) async throws -> String {
                let made = try await client.send(.post, "/v1/maps/\(slug)/invites", as: actor)
                #expect(made.status == .created, "\(made.body)")
                return try #require(made.json["code"] as? String)
            }
            func join(_ slug: String, _ actor: Actor, code: String) async throws {
                let joined = try await client.send(.post, "/v1/maps/\(slug)/members", as: actor, body: #"{"code":"\#(code)"}"#)
                #expect(joined.status == .created, "\(slug) \(actor.key): \(joined.body)")
            }
            func members(_ slug: String, as actor: Actor) async throws -> [String: String] {
                let list = try await client.send(.get, "/v1/maps/\(slug)/members", as: actor)
                #expect(list.status == .ok, "\(list.body)")
                let results = try #require(list.json["results"] as? [[String: Any]])
                return Dictionary(uniqueKeysWithValues: results.map { ($0["key"] as! String, $0["role"] as! String) })
            }
            let pinBody = MapTests.pinBody.replacingOccurrences(of: "Lagos", with: "Quokka Pier")

            // Their own map: the teacher a moderator, the student a member; an invite and a hide of theirs.
            let created = try await client.send(
                .post, "/v1/maps", as: Self.erasable, body: #"{"slug":"erasers-own","name":"Harbour class","read":"members"}"#)
            #expect(created.status == .created, "\(created.body)")
            try await join("erasers-own", Self.student, code: try await invite("erasers-own", by: Self.erasable))
            try await join("erasers-own", Self.teacher, code: try await invite("erasers-own", by: Self.erasable))
            let promoted = try await client.send(
                .put, "/v1/maps/erasers-own/members/\(Self.teacher.key)/role", as: Self.erasable, body: #"{"role":"moderator"}"#)
            #expect(promoted.status == .ok, "\(promoted.body)")
            let unused = try await invite("erasers-own", by: Self.erasable)
            _ = try await client.send(.post, "/maps/erasers-own/v1/StudentLocation", as: Self.erasable, body: pinBody)
            let studentsPin = try #require(
                try await client.send(.post, "/maps/erasers-own/v1/StudentLocation", as: Self.student, body: MapTests.pinBody)
                    .json["objectId"] as? String)
            let hidden = try await client.send(
                .post, "/maps/erasers-own/v1/StudentLocation/\(studentsPin)/hide", as: Self.erasable, body: #"{"reason":"off topic"}"#)
            #expect(hidden.status == .ok, "\(hidden.body)")

            // The teacher's maps: one they joined, left, joined again and were removed from; one they moderated.
            for slug in ["removed-from", "moderated"] {
                let made = try await client.send(.post, "/v1/maps", as: Self.teacher, body: #"{"slug":"\#(slug)","name":"Teacher's \#(slug)"}"#)
                #expect(made.status == .created, "\(made.body)")
                try await join(slug, Self.student, code: try await invite(slug, by: Self.teacher))
            }
            try await join("removed-from", Self.erasable, code: try await invite("removed-from", by: Self.teacher))
            #expect(try await client.send(.delete, "/v1/maps/removed-from/members/me", as: Self.erasable).status == .ok)
            try await join("removed-from", Self.erasable, code: try await invite("removed-from", by: Self.teacher))
            _ = try await client.send(.post, "/maps/removed-from/v1/StudentLocation", as: Self.erasable, body: pinBody)
            #expect(try await client.send(.delete, "/v1/maps/removed-from/members/\(Self.erasable.key)", as: Self.teacher).status == .ok)
            try await join("moderated", Self.erasable, code: try await invite("moderated", by: Self.teacher))
            _ = try await client.send(
                .put, "/v1/maps/moderated/members/\(Self.erasable.key)/role", as: Self.teacher, body: #"{"role":"moderator"}"#)
            let moderatedPin = try #require(
                try await client.send(.post, "/maps/moderated/v1/StudentLocation", as: Self.student, body: MapTests.pinBody)
                    .json["objectId"] as? String)
            for action in ["hide", "unhide"] {
                let done = try await client.send(
                    .post, "/maps/moderated/v1/StudentLocation/\(moderatedPin)/\(action)", as: Self.erasable, body: #"{"reason":"checking"}"#)
                #expect(done.status == .ok, "\(action): \(done.body)")
            }
            _ = try await client.send(.post, "/maps/moderated/v1/StudentLocation", as: Self.erasable, body: pinBody)
            try await database.withClient { pool in
                try await Compaction.run(tables: Migrations.erasedTables, on: pool, logger: TestDatabase.logger)
                #expect(try await TestDatabase.filesHolding(Self.theirs, pool) == Set(Self.theirs), "the scan finds what is there")
            }

            let erased = try await client.send(.post, "/v1/erasures", as: Self.erasable)
            #expect(erased.status == .ok, "\(erased.body)")
            #expect(erased.json["pins"] as? Int == 3)

            // Their map is the teacher's now, the student still on it, the student's pin still hidden.
            #expect(try await members("erasers-own", as: Self.teacher) == [Self.teacher.key: "owner", Self.student.key: "member"])
            let map = try await client.send(.get, "/v1/maps/erasers-own", as: Self.teacher)
            #expect(map.json["role"] as? String == "owner")
            #expect(map.json["name"] as? String == "Harbour class", "the map's name is the map's, not theirs")
            let queue = try await client.send(.get, "/v1/maps/erasers-own/hidden", as: Self.teacher)
            let held = try #require((queue.json["results"] as? [[String: Any]])?.first)
            #expect((held["pin"] as? [String: Any])?["objectId"] as? String == studentsPin)
            #expect(held["hiddenBy"] as? String == "")
            #expect(held["reason"] as? String == "off topic")
            let list = try await client.send(.get, "/maps/erasers-own/v1/StudentLocation", as: Self.teacher)
            #expect((list.json["results"] as? [Any])?.isEmpty == true, "their pin gone, the student's hidden")
            let joinedByOldInvite = try await client.send(.post, "/v1/maps/erasers-own/members", as: Self.outsider, body: #"{"code":"\#(unused)"}"#)
            #expect(joinedByOldInvite.status == .created, "an invite they made is the map's: \(joinedByOldInvite.body)")
            for slug in ["removed-from", "moderated"] {
                #expect(try await members(slug, as: Self.teacher) == [Self.teacher.key: "owner", Self.student.key: "member"], "\(slug)")
                let pins = try await client.send(.get, "/maps/\(slug)/v1/StudentLocation", as: Self.teacher)
                let owners = (pins.json["results"] as? [[String: Any]])?.compactMap { $0["uniqueKey"] as? String }
                #expect(owners == (slug == "moderated" ? [Self.student.key] : []), "\(slug)")
            }
            #expect((try await client.send(.get, "/v1/maps", as: Self.erasable).json["results"] as? [Any])?.isEmpty == true)

            try await database.withClient { pool in
                let rows = try await pool.query("SELECT row_to_json(e)::text FROM locations.events e", logger: TestDatabase.logger)
                for text in try await rows.collect().map({ try $0.decode(String.self) }) {
                    #expect(!Self.theirs.contains { text.contains($0) }, "\(text)")
                }
                for row in try await MapTests.mapRows(pool) {
                    #expect(!Self.theirs.contains { row.contains($0) }, "\(row)")
                }
                let handedOn = try await pool.query(
                    """
                    SELECT data->>'key', metadata->>'reason' FROM locations.events
                    WHERE stream_name = 'map-erasers-own' AND event_type = 'RoleGranted' ORDER BY stream_version DESC LIMIT 1
                    """, logger: TestDatabase.logger
                ).collect().first?.decode((String, String?).self)
                #expect(handedOn?.0 == Self.teacher.key && handedOn?.1 == "erased")

                let before = try await MapTests.mapRows(pool)
                let verified = try await Replayer(client: pool, logger: TestDatabase.logger).run(verify: true, progress: ReplayTests.quietProgress)
                #expect(verified.differenceCount == 0, "\(verified.differences)")
                _ = try await Replayer(client: pool, logger: TestDatabase.logger).run(verify: false, progress: ReplayTests.quietProgress)
                #expect(try await MapTests.mapRows(pool) == before)

                try await Compaction.run(tables: Migrations.erasedTables, on: pool, logger: TestDatabase.logger)
                let left = try await TestDatabase.relationsHolding(Self.theirs, pool)
                #expect(left.isEmpty, "\(left)")
            }
            let again = try await client.send(.post, "/v1/erasures", as: Self.erasable)
            #expect(again.json["pins"] as? Int == 0)
        }
    }

    @Test func anOwnerWithNobodyToHandTheMapToLeavesItOwnerless() async throws {
        try await withLiveService { client, database in
            let created = try await client.send(
                .post, "/v1/maps", as: Self.erasable, body: #"{"slug":"alone-here","name":"Solo","read":"public"}"#)
            #expect(created.status == .created, "\(created.body)")
            #expect(try await client.send(.post, "/v1/erasures", as: Self.erasable).status == .ok)
            let map = try await client.send(.get, "/v1/maps/alone-here", as: Self.teacher)
            #expect(map.status == .ok, "a public map stays readable: \(map.body)")
            try await database.withClient { pool in
                let rows = try await pool.query(
                    "SELECT count(*) FROM locations.map_members WHERE map = 'alone-here'", logger: TestDatabase.logger
                ).collect().first!.decode(Int.self)
                #expect(rows == 0)
                let verified = try await Replayer(client: pool, logger: TestDatabase.logger).run(verify: true, progress: ReplayTests.quietProgress)
                #expect(verified.differenceCount == 0, "\(verified.differences)")
            }
        }
    }
}
