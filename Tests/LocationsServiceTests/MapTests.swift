import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import OnTheMapShared
import PostgresNIO
import ServiceKit
import TestSupport
import Testing

@testable import LocationsService
@testable import ServiceTwins

/// Class maps on the service, over PostgreSQL: a map's life as events and read models, who may do what on
/// it, its pins apart from every other map's, and replay rebuilding all of it.
@Suite struct MapTests {
    static let teacher = TestActors.jarrod
    static let student = TestActors.amara
    static let outsider = TestActors.joao
    static let pinBody = #"{"mapString":"Lagos","mediaURL":"https://example.com","latitude":6.45,"longitude":3.39}"#

    /// A members-only map `slug` made by the teacher, with the student joined by an invite; answers the code.
    @discardableResult
    static func classMap(
        _ client: any TestClientProtocol, _ slug: String, read: String = "members", post: String = "members"
    )
        async throws -> String
    {
        let created = try await client.send(
            .post, "/v1/maps", as: teacher, body: #"{"slug":"\#(slug)","name":"Class \#(slug)","read":"\#(read)","post":"\#(post)"}"#)
        #expect(created.status == .created, "\(created.body)")
        let invite = try await client.send(.post, "/v1/maps/\(slug)/invites", as: teacher)
        #expect(invite.status == .created, "\(invite.body)")
        let code = try #require(invite.json["code"] as? String)
        let joined = try await client.send(.post, "/v1/maps/\(slug)/members", as: student, body: #"{"code":"\#(code)"}"#)
        #expect(joined.status == .created, "\(joined.body)")
        return code
    }

    @Test func aMapIsCreatedWithItsOwnerAndItsSlugIsCheckedAndKept() async throws {
        try await withLiveService { client, _ in
            let created = try await client.send(
                .post, "/v1/maps", as: Self.teacher, body: #"{"slug":"ios-2027","name":" iOS 2027 ","read":"members","post":"members"}"#)
            #expect(created.status == .created)
            #expect(created.json["slug"] as? String == "ios-2027")
            #expect(created.json["name"] as? String == "iOS 2027")
            #expect(created.json["role"] as? String == "owner")
            #expect(created.json["url"] as? String == "/maps/ios-2027/")
            #expect(created.json["pinsPerStudent"] as? Int == PinCap.defaultPinsPerStudent)

            let again = try await client.send(.post, "/v1/maps", as: Self.outsider, body: #"{"slug":"ios-2027","name":"Mine"}"#)
            #expect(again.status == .conflict)
            #expect(again.json["code"] as? Int == 137)
            for slug in ["IOS-2027", "io", "ios--2027", "-ios", "ios_2027", "ïos-2027", "default", String(repeating: "a", count: 41)] {
                let refused = try await client.send(.post, "/v1/maps", as: Self.teacher, body: #"{"slug":"\#(slug)","name":"x"}"#)
                #expect(refused.status == .badRequest, "\(slug): \(refused.body)")
                #expect(refused.json["code"] as? Int == 142)
            }
            let unnamed = try await client.send(.post, "/v1/maps", as: Self.teacher, body: #"{"slug":"unnamed","name":"   "}"#)
            #expect(unnamed.status == .badRequest)
            let anonymous = try await client.send(.post, "/v1/maps", body: #"{"slug":"anon-map","name":"x"}"#)
            #expect(anonymous.status == .unauthorized)

            let mine = try await client.send(.get, "/v1/maps", as: Self.teacher)
            #expect((mine.json["results"] as? [[String: Any]])?.compactMap { $0["slug"] as? String } == ["ios-2027"])
            let theirs = try await client.send(.get, "/v1/maps", as: Self.outsider)
            #expect((theirs.json["results"] as? [[String: Any]])?.isEmpty == true)
        }
    }

    @Test func aMembersOnlyMapIsNotFoundEverywhereForANonMember() async throws {
        try await withLiveService { client, _ in
            try await Self.classMap(client, "private-class")
            let pinned = try await client.send(.post, "/maps/private-class/v1/StudentLocation", as: Self.student, body: Self.pinBody)
            #expect(pinned.status == .ok, "\(pinned.body)")
            let objectId = try #require(pinned.json["objectId"] as? String)
            let base = "/maps/private-class/v1/StudentLocation"
            for caller in [nil, Self.outsider] {
                for path in [
                    base, "\(base)?limit=5", "\(base)/\(objectId)", "\(base)/\(objectId)/history", "/maps/private-class/v1/StudentLocation.geojson",
                    "/v1/maps/private-class", "/v1/maps/private-class/access", "/v1/maps/private-class/members",
                ] {
                    let reply = try await client.send(.get, path, as: caller)
                    // Only a route that needs a caller asks the anonymous one to sign in, whatever the map.
                    #expect(reply.status == (caller == nil && path.hasSuffix("/members") ? .unauthorized : .notFound), "\(path): \(reply.body)")
                    #expect(!reply.body.contains("Lagos"))
                }
                let write = try await client.send(.post, base, as: caller, body: Self.pinBody)
                #expect(write.status == (caller == nil ? .unauthorized : .notFound))
            }
            // A map that does not exist answers the same.
            let none = try await client.send(.get, "/maps/no-such-class/v1/StudentLocation", as: Self.outsider)
            #expect(none.status == .notFound)
            #expect(none.body == (try await client.send(.get, base, as: Self.outsider)).body)
        }
    }

    /// The class maps' feed (`maps=class`), which the gateway follows to keep every class map's list and
    /// live streams: each class map's pin events with their map, never the default map's, and every map that
    /// moved, by its pins or by its own life.
    @Test func theClassMapsFeedListsEveryClassMapsChangesAndTheMapsThatMoved() async throws {
        try await withLiveService { client, _ in
            let start = try #require(try await client.send(.get, "/v1/StudentLocation/changes?after=now&maps=class").json["cursor"] as? String)
            try await Self.classMap(client, "feed-a")
            try await Self.classMap(client, "feed-b", read: "public")
            let onA = try #require(
                try await client.send(.post, "/maps/feed-a/v1/StudentLocation", as: Self.student, body: Self.pinBody).json["objectId"] as? String)
            #expect(try await client.send(.post, "/v1/StudentLocation", as: Self.student, body: Self.pinBody).status == .ok)
            let read = try await Self.follow(client, from: start) { events, maps in
                maps.count == 2 && events.contains { ($0["location"] as? [String: Any])?["objectId"] as? String == onA }
            }
            // A's pin alone, with its map: the default map's pin is not among them.
            #expect(read.events.count == 1, "\(read.events)")
            #expect(read.events.first?["map"] as? String == "feed-a")
            // Both maps moved (B by its creation, invite and member alone).
            #expect(read.maps == ["feed-a", "feed-b"])
            // Without events, the maps that moved still come.
            let bare = try await Self.follow(client, from: start, events: false) { _, maps in maps.count == 2 }
            #expect(bare.events.isEmpty)
            #expect(bare.maps == ["feed-a", "feed-b"])
            // The default map's changes move the cursor on and list no map.
            #expect(try await client.send(.post, "/v1/StudentLocation", as: Self.student, body: Self.pinBody).status == .ok)
            let quiet = try await Self.follow(client, from: read.cursor) { _, _ in true }
            #expect(quiet.maps.isEmpty && quiet.events.isEmpty)
            #expect(quiet.cursor != read.cursor, "the cursor moves past the default map's changes")
            // The map's own life moves it too: its settings changed.
            #expect(try await client.send(.patch, "/v1/maps/feed-b", as: Self.teacher, body: #"{"name":"Renamed"}"#).status == .ok)
            let renamed = try await Self.follow(client, from: quiet.cursor) { _, maps in !maps.isEmpty }
            #expect(renamed.maps == ["feed-b"])
            #expect(renamed.events.isEmpty)
            // Only the default map's feed takes it.
            let refused = try await client.send(.get, "/maps/feed-a/v1/StudentLocation/changes?after=now&maps=class")
            #expect(refused.status == .badRequest)
            #expect(try await client.send(.get, "/v1/StudentLocation/changes?after=now&maps=every").status == .badRequest)
        }
    }

    /// The class maps' feed read as the gateway follows it, page after page from `cursor`, until `done` holds
    /// for what came and the cursor has moved (or 30 s have passed: on a cluster shared with other tests, their
    /// open transactions hold back what a follower may read): the events, the maps that moved, each once and
    /// first seen first, and the cursor reached.
    static func follow(
        _ client: any TestClientProtocol, from cursor: String, events listed: Bool = true,
        until done: ([[String: Any]], [String]) -> Bool
    ) async throws -> (events: [[String: Any]], maps: [String], cursor: String) {
        var (events, maps, at) = ([[String: Any]](), [String](), cursor)
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            let page = try await client.send(.get, "/v1/StudentLocation/changes?after=\(at)&wait=2&maps=class\(listed ? "" : "&events=false")")
            #expect(page.status == .ok)
            events += page.json["events"] as? [[String: Any]] ?? []
            for map in page.json["maps"] as? [String] ?? [] where !maps.contains(map) { maps.append(map) }
            at = try #require(page.json["cursor"] as? String)
            if at != cursor, done(events, maps) { break }
        }
        return (events, maps, at)
    }

    @Test func aClassMapsPinsAreOnItAloneAndItsPathsReachNoOtherMapsPins() async throws {
        try await withLiveService { client, _ in
            try await Self.classMap(client, "class-a")
            try await Self.classMap(client, "class-b")
            let onA = try #require(
                try await client.send(.post, "/maps/class-a/v1/StudentLocation", as: Self.student, body: Self.pinBody).json["objectId"] as? String)
            let onDefault = try await client.post(as: Self.student)

            let listA = try await client.send(.get, "/maps/class-a/v1/StudentLocation", as: Self.teacher)
            #expect((listA.json["results"] as? [[String: Any]])?.compactMap { $0["objectId"] as? String } == [onA])
            let listB = try await client.send(.get, "/maps/class-b/v1/StudentLocation", as: Self.teacher)
            #expect((listB.json["results"] as? [[String: Any]])?.isEmpty == true)
            let listDefault = try await client.send(.get, "/v1/StudentLocation")
            #expect((listDefault.json["results"] as? [[String: Any]])?.compactMap { $0["objectId"] as? String } == [onDefault])

            // Through another map's path (or the default map's) the pin is not there, to read or to change.
            for path in ["/v1/StudentLocation/\(onA)", "/maps/class-b/v1/StudentLocation/\(onA)", "/v1/StudentLocation/\(onA)/history"] {
                #expect(try await client.send(.get, path, as: Self.student).status == .notFound, "\(path)")
                #expect(try await client.send(.put, path, as: Self.student, body: #"{"mapString":"Moved"}"#).status == .notFound, "\(path)")
                #expect(try await client.send(.delete, path, as: Self.student).status == .notFound, "\(path)")
            }
            #expect(try await client.send(.get, "/maps/class-a/v1/StudentLocation/\(onDefault)", as: Self.student).status == .notFound)
            // Its own map's path changes it.
            let moved = try await client.send(.put, "/maps/class-a/v1/StudentLocation/\(onA)", as: Self.student, body: #"{"mapString":"Abuja"}"#)
            #expect(moved.status == .ok)
            let history = try await client.send(.get, "/maps/class-a/v1/StudentLocation/\(onA)/history", as: Self.teacher)
            #expect(history.status == .ok)
            #expect(history.body.contains("Abuja"))
        }
    }

    @Test func rolesDecideWhoPostsModeratesAndRunsTheMap() async throws {
        try await withLiveService { client, _ in
            try await Self.classMap(client, "roles-a")
            try await Self.classMap(client, "roles-b", read: "public", post: "members")
            // A member of A cannot post on B (public to read, members to post).
            let onB = try await client.send(.post, "/maps/roles-b/v1/StudentLocation", as: Self.outsider, body: Self.pinBody)
            #expect(onB.status == .forbidden)
            #expect(onB.json["error"] as? String == "Only members of this map may post.")
            #expect(try await client.send(.get, "/maps/roles-b/v1/StudentLocation", as: Self.outsider).status == .ok)
            #expect(try await client.send(.get, "/maps/roles-b/v1/StudentLocation").status == .ok)

            let pinOnB = try #require(
                try await client.send(.post, "/maps/roles-b/v1/StudentLocation", as: Self.student, body: Self.pinBody).json["objectId"] as? String)
            // A member is no moderator: no hide, no members list, no invites, no settings.
            let reason = #"{"reason":"spam"}"#
            #expect(
                try await client.send(.post, "/maps/roles-b/v1/StudentLocation/\(pinOnB)/hide", as: Self.student, body: reason).status == .forbidden)
            #expect(try await client.send(.get, "/v1/maps/roles-b/members", as: Self.student).status == .forbidden)
            #expect(try await client.send(.post, "/v1/maps/roles-b/invites", as: Self.student).status == .forbidden)
            #expect(try await client.send(.patch, "/v1/maps/roles-b", as: Self.student, body: #"{"name":"Mine"}"#).status == .forbidden)
            // The owner of A is no moderator of B's pins through A's path, nor through B's.
            _ = try await client.send(.post, "/v1/maps", as: Self.outsider, body: #"{"slug":"roles-c","name":"C"}"#)
            #expect(
                try await client.send(.post, "/maps/roles-c/v1/StudentLocation/\(pinOnB)/hide", as: Self.outsider, body: reason).status == .notFound)
            #expect(
                try await client.send(.post, "/maps/roles-b/v1/StudentLocation/\(pinOnB)/hide", as: Self.outsider, body: reason).status == .forbidden)

            // The owner makes the student a moderator, who then hides with a reason; the hidden list says why.
            let granted = try await client.send(
                .put, "/v1/maps/roles-b/members/\(Self.student.key)/role", as: Self.teacher, body: #"{"role":"moderator"}"#)
            #expect(granted.json["role"] as? String == "moderator")
            let hidden = try await client.send(.post, "/maps/roles-b/v1/StudentLocation/\(pinOnB)/hide", as: Self.student, body: reason)
            #expect(hidden.status == .ok, "\(hidden.body)")
            #expect(hidden.json["reason"] as? String == "spam")
            let list = try await client.send(.get, "/maps/roles-b/v1/StudentLocation", as: Self.outsider)
            #expect(!list.body.contains(pinOnB))
            let queue = try await client.send(.get, "/v1/maps/roles-b/hidden", as: Self.teacher)
            let first = try #require((queue.json["results"] as? [[String: Any]])?.first)
            #expect(first["reason"] as? String == "spam")
            #expect(first["hiddenBy"] as? String == Self.student.key)
            #expect((first["pin"] as? [String: Any])?["mapString"] as? String == "Lagos")
            #expect(try await client.send(.post, "/maps/roles-b/v1/StudentLocation/\(pinOnB)/unhide", as: Self.student).status == .ok)
            #expect(try await client.send(.get, "/maps/roles-b/v1/StudentLocation", as: Self.outsider).body.contains(pinOnB))
            // A moderator cannot hand the map on or change roles; the owner can, becoming a moderator.
            #expect(
                try await client.send(.put, "/v1/maps/roles-b/members/\(Self.teacher.key)/role", as: Self.student, body: #"{"role":"member"}"#).status
                    == .forbidden)
            let handed = try await client.send(
                .put, "/v1/maps/roles-b/members/\(Self.student.key)/role", as: Self.teacher, body: #"{"role":"owner"}"#)
            #expect(handed.json["role"] as? String == "owner")
            let teacherNow = try await client.send(.get, "/v1/maps/roles-b", as: Self.teacher)
            #expect(teacherNow.json["role"] as? String == "moderator")
        }
    }

    @Test func invitesAreCheckedAndARemovedMembersPinsLeaveWithThem() async throws {
        try await withLiveService { client, database in
            let code = try await Self.classMap(client, "invites")
            #expect(code.count == 22)
            // Wrong, revoked and used-up codes all answer "No such invite".
            let wrong = try await client.send(.post, "/v1/maps/invites/members", as: Self.outsider, body: #"{"code":"AAAAAAAAAAAAAAAAAAAAAA"}"#)
            #expect(wrong.status == .notFound)
            #expect(wrong.json["error"] as? String == "No such invite.")
            let once = try #require(
                try await client.send(.post, "/v1/maps/invites/invites", as: Self.teacher, body: #"{"uses":1}"#).json["code"] as? String)
            #expect(try await client.send(.post, "/v1/maps/invites/members", as: Self.outsider, body: #"{"code":"\#(once)"}"#).status == .created)
            #expect(try await client.send(.delete, "/v1/maps/invites/members/me", as: Self.outsider).status == .ok)
            #expect(try await client.send(.post, "/v1/maps/invites/members", as: Self.outsider, body: #"{"code":"\#(once)"}"#).status == .notFound)
            #expect(try await client.send(.delete, "/v1/maps/invites/invites/\(code)", as: Self.teacher).status == .ok)
            #expect(try await client.send(.post, "/v1/maps/invites/members", as: Self.outsider, body: #"{"code":"\#(code)"}"#).status == .notFound)
            for body in [#"{"uses":0}"#, #"{"uses":10001}"#, #"{"expiresIn":59}"#, #"{"expiresIn":"soon"}"#] {
                #expect(try await client.send(.post, "/v1/maps/invites/invites", as: Self.teacher, body: body).status == .badRequest, "\(body)")
            }

            // The student posts twice; removed, both pins leave the map as deletions in the log.
            let fresh = try #require(try await client.send(.post, "/v1/maps/invites/invites", as: Self.teacher).json["code"] as? String)
            for _ in 0..<2 { _ = try await client.send(.post, "/maps/invites/v1/StudentLocation", as: Self.student, body: Self.pinBody) }
            #expect(try await client.send(.delete, "/v1/maps/invites/members/\(Self.student.key)", as: Self.teacher).status == .ok)
            let list = try await client.send(.get, "/maps/invites/v1/StudentLocation", as: Self.teacher)
            #expect((list.json["results"] as? [[String: Any]])?.isEmpty == true)
            let removals = try await database.withClient { client in
                try await client.query(
                    "SELECT count(*) FROM locations.events WHERE map = 'invites' AND event_type = 'LocationDeleted' AND metadata->>'reason' = 'removed'",
                    logger: TestDatabase.logger
                ).collect().first!.decode(Int.self)
            }
            #expect(removals == 2)
            // An invite made before the removal does not bring them back; one made after does.
            #expect(try await client.send(.post, "/v1/maps/invites/members", as: Self.student, body: #"{"code":"\#(fresh)"}"#).status == .notFound)
            #expect(try await client.send(.get, "/maps/invites/v1/StudentLocation", as: Self.student).status == .notFound)
            let after = try #require(try await client.send(.post, "/v1/maps/invites/invites", as: Self.teacher).json["code"] as? String)
            #expect(try await client.send(.post, "/v1/maps/invites/members", as: Self.student, body: #"{"code":"\#(after)"}"#).status == .created)
        }
    }

    /// An `Idempotency-Key` used on one map and again on another is not a retry: the second is refused as a
    /// reused key (422), never answered with the first map's pin. A moderator hiding a hidden pin is told so.
    @Test func anIdempotencyKeyIsAMapsOwnAndAHiddenPinIsHiddenOnce() async throws {
        try await withLiveService { client, _ in
            try await Self.classMap(client, "keyed")
            let key = HTTPField(name: HTTPField.Name(InternalHeaders.idempotencyKey)!, value: "retry-1")
            let first = try await client.send(.post, "/maps/keyed/v1/StudentLocation", as: Self.student, body: Self.pinBody, headers: [key])
            #expect(first.status == .ok)
            let again = try await client.send(.post, "/maps/keyed/v1/StudentLocation", as: Self.student, body: Self.pinBody, headers: [key])
            #expect(again.json["objectId"] as? String == first.json["objectId"] as? String)
            let elsewhere = try await client.send(.post, "/v1/StudentLocation", as: Self.student, body: Self.pinBody, headers: [key])
            #expect(elsewhere.status == .unprocessableContent)
            #expect((try await client.send(.get, "/v1/StudentLocation").json["results"] as? [Any])?.isEmpty == true)

            let pin = try #require(first.json["objectId"] as? String)
            let reason = #"{"reason":"spam"}"#
            #expect(try await client.send(.post, "/maps/keyed/v1/StudentLocation/\(pin)/hide", as: Self.teacher, body: reason).status == .ok)
            let twice = try await client.send(.post, "/maps/keyed/v1/StudentLocation/\(pin)/hide", as: Self.teacher, body: reason)
            #expect(twice.status == .conflict)
            #expect(twice.json["error"] as? String == "The pin is hidden already.")
            let noReason = try await client.send(.post, "/maps/keyed/v1/StudentLocation/\(pin)/unhide", as: Self.teacher)
            #expect(noReason.status == .ok)
            let blank = try await client.send(.post, "/maps/keyed/v1/StudentLocation/\(pin)/hide", as: Self.teacher, body: #"{"reason":"  "}"#)
            #expect(blank.status == .badRequest)
        }
    }

    @Test func approvalKeepsANewMemberPendingUntilAModeratorLetsThemIn() async throws {
        try await withLiveService { client, _ in
            _ = try await client.send(.post, "/v1/maps", as: Self.teacher, body: #"{"slug":"approved","name":"A","approval":true}"#)
            let code = try #require(try await client.send(.post, "/v1/maps/approved/invites", as: Self.teacher).json["code"] as? String)
            let joined = try await client.send(.post, "/v1/maps/approved/members", as: Self.student, body: #"{"code":"\#(code)"}"#)
            #expect(joined.json["role"] as? String == "pending")
            #expect(try await client.send(.get, "/maps/approved/v1/StudentLocation", as: Self.student).status == .notFound)
            #expect(try await client.send(.get, "/v1/maps/approved", as: Self.student).json["role"] as? String == "pending")
            let approved = try await client.send(
                .put, "/v1/maps/approved/members/\(Self.student.key)/role", as: Self.teacher, body: #"{"role":"member"}"#)
            #expect(approved.json["role"] as? String == "member")
            #expect(try await client.send(.get, "/maps/approved/v1/StudentLocation", as: Self.student).status == .ok)
        }
    }

    @Test func deletingAMapTakesEverythingOnItOffAndKeepsItsSlug() async throws {
        try await withLiveService { client, database in
            try await Self.classMap(client, "gone-class")
            let body = Self.pinBody.replacingOccurrences(of: "Lagos", with: "Zanzibar Quay")
            let pin = try #require(
                try await client.send(.post, "/maps/gone-class/v1/StudentLocation", as: Self.student, body: body).json["objectId"] as? String)
            #expect(try await client.send(.delete, "/v1/maps/gone-class", as: Self.student).status == .forbidden)
            #expect(try await client.send(.delete, "/v1/maps/gone-class", as: Self.teacher).status == .ok)
            for path in ["/maps/gone-class/v1/StudentLocation", "/maps/gone-class/v1/StudentLocation/\(pin)/history", "/v1/maps/gone-class"] {
                #expect(try await client.send(.get, path, as: Self.teacher).status == .notFound, "\(path)")
            }
            #expect((try await client.send(.get, "/v1/maps", as: Self.student).json["results"] as? [Any])?.isEmpty == true)
            #expect(try await client.send(.post, "/v1/maps", as: Self.outsider, body: #"{"slug":"gone-class","name":"x"}"#).status == .conflict)
            let left = try await database.withClient { client in
                try await client.query(
                    """
                    SELECT (SELECT count(*) FROM locations.events WHERE map = 'gone-class' AND data::text LIKE '%Lagos%'),
                           (SELECT count(*) FROM locations.events WHERE stream_name = 'map-gone-class'),
                           (SELECT count(*) FROM locations.map_members WHERE map = 'gone-class')
                    """, logger: TestDatabase.logger
                ).collect().first!.decode((Int, Int, Int).self)
            }
            #expect(left == (0, 1, 0))
            // Once compacted, nothing of what was on the map is anywhere in the database's files.
            let traces = ["Zanzibar Quay", Self.student.lastName, "Class gone-class"]
            try await database.withClient { client in
                try await Compaction.run(tables: Migrations.erasedTables, on: client, logger: TestDatabase.logger)
                let found = try await TestDatabase.relationsHolding(traces, client)
                #expect(found.isEmpty, "\(found)")
            }
        }
    }

    @Test func replayRebuildsTheMapsReadModelsAndVerifyFindsThemEqual() async throws {
        try await withLiveService { client, database in
            try await Self.classMap(client, "replayed")
            _ = try await client.send(.patch, "/v1/maps/replayed", as: Self.teacher, body: #"{"name":"Renamed","read":"public"}"#)
            let invite = try #require(try await client.send(.post, "/v1/maps/replayed/invites", as: Self.teacher).json["code"] as? String)
            _ = try await client.send(.post, "/v1/maps/replayed/members", as: Self.outsider, body: #"{"code":"\#(invite)"}"#)
            _ = try await client.send(.put, "/v1/maps/replayed/members/\(Self.outsider.key)/role", as: Self.teacher, body: #"{"role":"moderator"}"#)
            _ = try await client.send(.delete, "/v1/maps/replayed/members/\(Self.student.key)", as: Self.teacher)
            _ = try await client.send(.post, "/maps/replayed/v1/StudentLocation", as: Self.outsider, body: Self.pinBody)

            try await database.withClient { pool in
                let before = try await Self.mapRows(pool)
                let verified = try await Replayer(client: pool, logger: TestDatabase.logger).run(verify: true, progress: ReplayTests.quietProgress)
                #expect(verified.differenceCount == 0, "\(verified.differences)")
                #expect(verified.mapEvents == 8)
                // A read model gone wrong is found by verify, and made right by replay.
                try await pool.query(
                    "UPDATE locations.map_members SET role = 'owner' WHERE account_key = \(Self.outsider.key)", logger: TestDatabase.logger)
                let broken = try await Replayer(client: pool, logger: TestDatabase.logger).run(verify: true, progress: ReplayTests.quietProgress)
                #expect(broken.differenceCount == 2)
                #expect(broken.differences.contains { $0.contains("locations.map_members") })
                let replayed = try await Replayer(client: pool, logger: TestDatabase.logger).run(verify: false, progress: ReplayTests.quietProgress)
                #expect(replayed.mapEvents == 8)
                #expect(try await Self.mapRows(pool) == before)
                #expect(replayed.pins == 1)
            }
            let list = try await client.send(.get, "/maps/replayed/v1/StudentLocation")
            #expect((list.json["results"] as? [[String: Any]])?.count == 1)
        }
    }

    static func mapRows(_ client: PostgresClient) async throws -> [String] {
        var rows: [String] = []
        for table in Replayer.mapTables {
            let lines = try await client.query(
                PostgresQuery(unsafeSQL: "SELECT row_to_json(t)::text FROM locations.\(table) AS t ORDER BY 1"), logger: TestDatabase.logger)
            for try await line in lines.decode(String.self) { rows.append(line) }
        }
        return rows
    }
}
