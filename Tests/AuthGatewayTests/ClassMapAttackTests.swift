import AsyncHTTPClient
import Foundation
import HTTPTypes
import HummingbirdTesting
import OnTheMapShared
import PostgresNIO
import ServiceKit
import TestSupport
import Testing

@testable import AuthGateway

/// The attacks on class maps that SECURITY.md lists, made through the gateway on a real locations-service
/// and PostgreSQL: reading or writing a map one is not on, moderating another map's pins, guessing and
/// replaying invites, raising one's own role, and slugs spelled to reach a map they do not name. Each
/// asserts what the attacker sees, and that nothing changed for anyone else.
@Suite struct ClassMapAttackTests {
    /// A slug no map has: an answer about a map that reveals nothing is this map's answer, byte for byte.
    static let noMap = "no-such-map"

    static func pinBody(_ mapString: String) -> String {
        #"{"mapString":"\#(mapString)","mediaURL":"https://example.com","latitude":-12.05,"longitude":-77.04}"#
    }

    /// Posts a pin on the map whose base URL is `base` (`""`: the default map); answers the post's body.
    static func pin(_ client: any TestClientProtocol, on base: String, as student: Student, mapString: String) async throws -> [String: Any] {
        let posted = try await client.send(.post, "\(base)/v1/StudentLocation", body: pinBody(mapString), headers: [student.bearer])
        guard posted.status == .ok, posted.json["objectId"] is String else { throw HarnessError("post on \(base): \(posted.status) \(posted.body)") }
        return posted.json
    }

    static func join(_ client: any TestClientProtocol, _ slug: String, code: String, as student: Student) async throws -> Reply {
        try await client.send(.post, "/v1/maps/\(slug)/members", body: #"{"code":"\#(code)"}"#, headers: [student.bearer])
    }

    static func invite(_ client: any TestClientProtocol, _ slug: String, by student: Student, body: String? = nil) async throws -> String {
        let made = try await client.send(.post, "/v1/maps/\(slug)/invites", body: body, headers: [student.bearer])
        guard made.status == .created, let code = made.json["code"] as? String else { throw HarnessError("invite: \(made.status) \(made.body)") }
        return code
    }

    /// The request to `path` on the map `slug`, and the same to a map that does not exist: the answers must
    /// be one, so that nobody learns from it whether the map is there.
    static func expectAnsweredAsNoMap(
        _ client: any TestClientProtocol, _ method: HTTPRequest.Method, _ path: String, slug: String, body: String? = nil,
        headers: [HTTPField] = [], sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> Reply {
        let reply = try await client.send(method, path, body: body, headers: headers)
        let none = try await client.send(method, path.replacingOccurrences(of: "/\(slug)", with: "/\(noMap)"), body: body, headers: headers)
        #expect(
            reply.status == none.status && reply.body == none.body,
            "\(method) \(path): \(reply.status) \(reply.body), where no map is: \(none.status) \(none.body)", sourceLocation: sourceLocation)
        return reply
    }

    static func expectRefusal(
        _ reply: Reply, _ status: HTTPResponse.Status, _ code: Int, _ message: String? = nil, _ what: String = "",
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(reply.status == status, "\(what): \(reply.status) \(reply.body)", sourceLocation: sourceLocation)
        #expect(reply.json["code"] as? Int == code, "\(what): \(reply.body)", sourceLocation: sourceLocation)
        if let message { #expect(reply.json["error"] as? String == message, "\(what): \(reply.body)", sourceLocation: sourceLocation) }
    }

    /// The pin as its own map's reader sees it: its place, and how many events its history holds.
    static func pinState(_ client: any TestClientProtocol, _ base: String, _ objectId: String, as student: Student) async throws -> (String?, Int?) {
        let pin = try await client.send(.get, "\(base)/v1/StudentLocation/\(objectId)", headers: [student.bearer])
        let history = try await client.send(.get, "\(base)/v1/StudentLocation/\(objectId)/history", headers: [student.bearer])
        return (pin.json["mapString"] as? String, (history.json["results"] as? [Any])?.count)
    }

    // MARK: Cross-map reads

    /// Anonymous, signed in, or pending approval: whoever is not a member of a members-only map gets, from
    /// every route under it and from its API, the bytes a map that does not exist answers. Its pin is not
    /// read through the default map's routes either, even with a member's session.
    @Test func aMembersOnlyMapAnswersEveryNonMemberAsAMapThatDoesNotExist() async throws {
        try await withGateway(configure: { $0.writeLimit.burst = 100 }) { client, _ in
            let teacher = try await client.signedUpAndLoggedIn("teacher@example.com")
            let member = try await client.signedUpAndLoggedIn("member@example.com")
            let outsider = try await client.signedUpAndLoggedIn("outsider@example.com")
            let pending = try await client.signedUpAndLoggedIn("pending@example.com")
            let slug = "secret-class"
            let code = try #require(try await ClassMapTests.classMap(client, slug, teacher: teacher, students: [member])["code"] as? String)
            let approval = try await client.send(.patch, "/v1/maps/\(slug)", body: #"{"approval":true}"#, headers: [teacher.bearer])
            #expect(approval.status == .ok)
            #expect(try await Self.join(client, slug, code: code, as: pending).json["role"] as? String == "pending")
            let posted = try await Self.pin(client, on: "/maps/\(slug)", as: member, mapString: "Secret Lima")
            let objectId = try #require(posted["objectId"] as? String)
            let moment = try #require(posted["createdAt"] as? String)

            let base = "/maps/\(slug)/v1/StudentLocation"
            let pinReads = [
                base, "\(base)?limit=5&order=-updatedAt", "\(base)?uniqueKey=\(member.key)",
                "\(base)?where=%7B%22uniqueKey%22%3A%22\(member.key)%22%7D", "\(base)?at=\(moment)", "/maps/\(slug)/parse/classes/StudentLocation",
                "/maps/\(slug)/1/classes/StudentLocation", "/maps/\(slug)/1/classes/StudentLocation/\(objectId)", "\(base)/\(objectId)",
                "\(base)/\(objectId)/history", "/maps/\(slug)/v1/StudentLocation.geojson", "/maps/\(slug)/v1/StudentLocation.geojson?at=\(moment)",
                "\(base)/events",
            ]
            let apiReads = ["/v1/maps/\(slug)/members", "/v1/maps/\(slug)/invites", "/v1/maps/\(slug)/hidden"]
            let pinWrites: [(HTTPRequest.Method, String, String?)] = [
                (.post, base, Self.pinBody("Mine")), (.post, "/maps/\(slug)/parse/classes/StudentLocation", Self.pinBody("Mine")),
                (.put, "\(base)/\(objectId)", #"{"mapString":"Mine"}"#),
                (.put, "/maps/\(slug)/1/classes/StudentLocation/\(objectId)", #"{"mapString":"Mine"}"#), (.delete, "\(base)/\(objectId)", nil),
                (.post, "\(base)/\(objectId)/hide", #"{"reason":"mine"}"#), (.post, "\(base)/\(objectId)/unhide", nil),
            ]
            let apiWrites: [(HTTPRequest.Method, String, String?)] = [
                (.patch, "/v1/maps/\(slug)", #"{"name":"Mine"}"#), (.delete, "/v1/maps/\(slug)", nil), (.post, "/v1/maps/\(slug)/invites", nil),
                (.delete, "/v1/maps/\(slug)/invites/\(code)", nil), (.delete, "/v1/maps/\(slug)/members/\(member.key)", nil),
                (.put, "/v1/maps/\(slug)/members/\(member.key)/role", #"{"role":"moderator"}"#),
            ]

            for caller in [nil, outsider, pending] {
                let headers = caller.map { [$0.bearer] } ?? []
                let who = caller?.email ?? "anonymous"
                for path in pinReads {
                    let reply = try await Self.expectAnsweredAsNoMap(client, .get, path, slug: slug, headers: headers)
                    Self.expectRefusal(reply, .notFound, 101, "No such map.", "\(who) GET \(path)")
                    #expect(!reply.body.contains("Lima"))
                }
                // The map itself: a pending member is told they are waiting, and nothing more.
                let map = try await client.send(.get, "/v1/maps/\(slug)", headers: headers)
                if caller?.email == pending.email {
                    #expect(map.status == .ok && map.json["role"] as? String == "pending", "\(map.body)")
                } else {
                    let reply = try await Self.expectAnsweredAsNoMap(client, .get, "/v1/maps/\(slug)", slug: slug, headers: headers)
                    Self.expectRefusal(reply, .notFound, 101, "No such map.", "\(who) GET /v1/maps/\(slug)")
                }
                for path in apiReads {
                    let reply = try await Self.expectAnsweredAsNoMap(client, .get, path, slug: slug, headers: headers)
                    Self.expectRefusal(reply, caller == nil ? .unauthorized : .notFound, caller == nil ? 209 : 101, nil, "\(who) GET \(path)")
                }
                for (method, path, body) in pinWrites + apiWrites {
                    let reply = try await Self.expectAnsweredAsNoMap(client, method, path, slug: slug, body: body, headers: headers)
                    Self.expectRefusal(reply, caller == nil ? .unauthorized : .notFound, caller == nil ? 209 : 101, nil, "\(who) \(method) \(path)")
                }
            }
            let leave = try await Self.expectAnsweredAsNoMap(client, .delete, "/v1/maps/\(slug)/members/me", slug: slug, headers: [outsider.bearer])
            Self.expectRefusal(leave, .notFound, 101, "No such map.", "leaving a map one is not on")

            // Nothing changed: the member's pin, the member, the invite.
            #expect(try await Self.pinState(client, "/maps/\(slug)", objectId, as: member) == ("Secret Lima", 1))
            let members = try await client.send(.get, "/v1/maps/\(slug)/members", headers: [teacher.bearer])
            #expect((members.json["results"] as? [[String: Any]])?.compactMap { $0["role"] as? String } == ["owner", "member", "pending"])
            let invites = try await client.send(.get, "/v1/maps/\(slug)/invites", headers: [teacher.bearer])
            #expect((invites.json["results"] as? [[String: Any]])?.compactMap { $0["code"] as? String } == [code])

            // The default map's routes do not reach the class map's pin, even for its member.
            for path in [
                "/v1/StudentLocation", "/v1/StudentLocation?uniqueKey=\(member.key)", "/v1/StudentLocation?at=\(moment)",
                "/parse/classes/StudentLocation?where=%7B%22uniqueKey%22%3A%22\(member.key)%22%7D", "/v1/StudentLocation.geojson",
                "/v1/StudentLocation.geojson?at=\(moment)",
            ] {
                let reply = try await client.send(.get, path, headers: [member.bearer])
                #expect(reply.status == .ok, "\(path): \(reply.status)")
                #expect(!reply.body.contains("Lima") && !reply.body.contains(objectId), "\(path): \(reply.body)")
            }
            for path in ["/v1/StudentLocation/\(objectId)", "/v1/StudentLocation/\(objectId)/history", "/1/classes/StudentLocation/\(objectId)"] {
                Self.expectRefusal(try await client.send(.get, path, headers: [member.bearer]), .notFound, 101, "Object not found.", path)
            }
            // Nor its live stream, resumed from the start of the log: the first change it sends is the
            // default map's pin posted after the class map's.
            var request = HTTPClientRequest(url: "http://127.0.0.1:\(client.port!)/v1/StudentLocation/events")
            request.headers.add(name: "Last-Event-ID", value: "0-0")
            request.headers.add(name: "Authorization", value: "Bearer \(member.token)")
            let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
            #expect(response.status == .ok)
            let stream = LiveStreamTests.EventReader(response)
            let onDefault = try #require(try await Self.pin(client, on: "", as: outsider, mapString: "Open Quito")["objectId"] as? String)
            let frame = try await stream.next()
            #expect(frame["data"]?.contains(onDefault) == true, "\(frame)")
            #expect(frame["data"]?.contains("Lima") == false)
        }
    }

    // MARK: Cross-map writes

    /// A member of map A cannot post, change or delete on map B; a class map's pin is not reached through
    /// the default map's paths (any alias) or another map's, even by its owner; nor a default pin through
    /// a class map's. Every refusal is 404 or 403, and every pin stays as it was.
    @Test func aMemberOfOneMapCannotWriteOnAnotherNorReachAPinThroughAnotherMapsPaths() async throws {
        try await withGateway(configure: { $0.writeLimit.burst = 200 }) { client, _ in
            let teacher = try await client.signedUpAndLoggedIn("teacher@example.com")
            let alice = try await client.signedUpAndLoggedIn("alice@example.com")
            let bob = try await client.signedUpAndLoggedIn("bob@example.com")
            _ = try await ClassMapTests.classMap(client, "map-a", teacher: teacher, students: [alice, bob])
            _ = try await ClassMapTests.classMap(client, "map-b", teacher: teacher, students: [bob])
            _ = try await ClassMapTests.classMap(client, "map-p", teacher: teacher, students: [bob], read: "public")
            var pins: [String: String] = [:]
            for base in ["/maps/map-a", "/maps/map-b", "/maps/map-p", ""] {
                pins[base] = try #require(try await Self.pin(client, on: base, as: bob, mapString: "Bob\(base)")["objectId"] as? String)
            }
            let aliases = ["/v1/StudentLocation", "/parse/classes/StudentLocation", "/1/classes/StudentLocation"]

            // Alice, a member of A only, on B (members only) and P (public to read, members to post).
            for alias in aliases {
                let onB = try await client.send(.post, "/maps/map-b\(alias)", body: Self.pinBody("Alice"), headers: [alice.bearer])
                Self.expectRefusal(onB, .notFound, 101, "No such map.", "alice posting on B at \(alias)")
                let onP = try await client.send(.post, "/maps/map-p\(alias)", body: Self.pinBody("Alice"), headers: [alice.bearer])
                Self.expectRefusal(onP, .forbidden, 119, "Only members of this map may post.", "alice posting on P at \(alias)")
                for method in [HTTPRequest.Method.put, .delete] {
                    let body = method == .put ? #"{"mapString":"Alice was here"}"# : nil
                    for (base, pin) in pins where base != "/maps/map-a" {
                        // Through the pin's own map, through A (hers), and through the default map's paths.
                        for route in Set([base, "/maps/map-a", ""]) {
                            let reply = try await client.send(method, "\(route)\(alias)/\(pin)", body: body, headers: [alice.bearer])
                            let what = "alice \(method) of \(base)'s pin through \(route)\(alias)"
                            switch route {
                            case "/maps/map-b": Self.expectRefusal(reply, .notFound, 101, "No such map.", what)
                            case "/maps/map-p": Self.expectRefusal(reply, .forbidden, 119, "Only members of this map may post.", what)
                            case "": Self.expectRefusal(reply, base == "" ? .forbidden : .notFound, base == "" ? 119 : 101, nil, what)
                            default: Self.expectRefusal(reply, .notFound, 101, "Object not found.", what)
                            }
                        }
                    }
                }
            }
            // Bob owns every pin, and is a member of every map: still, a pin is reached through its own map alone.
            for alias in aliases {
                for method in [HTTPRequest.Method.put, .delete] {
                    let body = method == .put ? #"{"mapString":"Moved"}"# : nil
                    for (base, pin) in pins {
                        for route in ["/maps/map-a", "/maps/map-b", "/maps/map-p", ""] where route != base {
                            let reply = try await client.send(method, "\(route)\(alias)/\(pin)", body: body, headers: [bob.bearer])
                            Self.expectRefusal(reply, .notFound, 101, "Object not found.", "bob \(method) of \(base)'s pin through \(route)\(alias)")
                        }
                    }
                }
            }
            for (base, pin) in pins {
                #expect(try await Self.pinState(client, base, pin, as: bob) == ("Bob\(base)", 1), "\(base)")
            }
            let onB = try await client.send(.get, "/maps/map-b/v1/StudentLocation", headers: [bob.bearer])
            #expect((onB.json["results"] as? [[String: Any]])?.compactMap { $0["objectId"] as? String } == [pins["/maps/map-b"]!])
        }
    }

    /// A moderator of map A hides and unhides on A alone: B's pins (hidden or not) and the default map's are
    /// not there for them, through A's path or B's, and B's moderation queue is not theirs to read.
    @Test func aModeratorOfOneMapCannotHideOrUnhideAnotherMapsPins() async throws {
        try await withGateway(configure: { $0.writeLimit.burst = 50 }) { client, _ in
            let teacher = try await client.signedUpAndLoggedIn("teacher@example.com")
            let moderator = try await client.signedUpAndLoggedIn("moderator@example.com")
            let student = try await client.signedUpAndLoggedIn("student@example.com")
            _ = try await ClassMapTests.classMap(client, "mod-a", teacher: teacher, students: [moderator])
            _ = try await ClassMapTests.classMap(client, "mod-b", teacher: teacher, students: [student])
            let granted = try await client.send(
                .put, "/v1/maps/mod-a/members/\(moderator.key)/role", body: #"{"role":"moderator"}"#, headers: [teacher.bearer])
            #expect(granted.json["role"] as? String == "moderator")
            let onB = try #require(try await Self.pin(client, on: "/maps/mod-b", as: student, mapString: "On B")["objectId"] as? String)
            let onDefault = try #require(try await Self.pin(client, on: "", as: student, mapString: "On default")["objectId"] as? String)
            let reason = #"{"reason":"I do not like it"}"#

            for action in ["hide", "unhide"] {
                if action == "unhide" {
                    let hidden = try await client.send(
                        .post, "/maps/mod-b/v1/StudentLocation/\(onB)/hide", body: #"{"reason":"off topic"}"#, headers: [teacher.bearer])
                    #expect(hidden.status == .ok, "\(hidden.body)")
                }
                for pin in [onB, onDefault] {
                    let throughA = try await client.send(
                        .post, "/maps/mod-a/v1/StudentLocation/\(pin)/\(action)", body: reason, headers: [moderator.bearer])
                    Self.expectRefusal(throughA, .notFound, 101, "Object not found.", "\(action) of \(pin) through A")
                }
                let throughB = try await client.send(
                    .post, "/maps/mod-b/v1/StudentLocation/\(onB)/\(action)", body: reason, headers: [moderator.bearer])
                Self.expectRefusal(throughB, .notFound, 101, "No such map.", "\(action) through B")
            }
            Self.expectRefusal(try await client.send(.get, "/v1/maps/mod-b/hidden", headers: [moderator.bearer]), .notFound, 101, "No such map.")
            let queueOfA = try await client.send(.get, "/v1/maps/mod-a/hidden", headers: [moderator.bearer])
            #expect(queueOfA.status == .ok && (queueOfA.json["results"] as? [Any])?.isEmpty == true, "\(queueOfA.body)")

            // B's pin is still hidden as B's owner hid it; the default pin is untouched.
            let queueOfB = try await client.send(.get, "/v1/maps/mod-b/hidden", headers: [teacher.bearer])
            let entry = try #require((queueOfB.json["results"] as? [[String: Any]])?.first)
            #expect(entry["reason"] as? String == "off topic" && entry["hiddenBy"] as? String == teacher.key)
            #expect(!(try await client.send(.get, "/maps/mod-b/v1/StudentLocation", headers: [student.bearer]).body.contains(onB)))
            #expect(try await client.pins().compactMap { $0["objectId"] as? String }.contains(onDefault))
        }
    }

    // MARK: Invites

    /// An invite is 128 random bits; a guess, and every invite that lets no one in any more (used up,
    /// revoked, expired, another map's), answer the same 404 `No such invite.`, byte for byte, as does a
    /// map that does not exist. The guesses lock nobody out: the right code still works.
    @Test func everyCodeThatLetsNoOneInIsAnsweredAsAWrongGuess() async throws {
        try await withGateway(configure: { $0.writeLimit.burst = 50 }) { client, fixture in
            let teacher = try await client.signedUpAndLoggedIn("teacher@example.com")
            let friend = try await client.signedUpAndLoggedIn("friend@example.com")
            let guesser = try await client.signedUpAndLoggedIn("guesser@example.com")
            let live = try #require(try await ClassMapTests.classMap(client, "guess-me", teacher: teacher, students: [])["code"] as? String)
            _ = try await ClassMapTests.classMap(client, "other-map", teacher: teacher, students: [])
            let otherMaps = try await Self.invite(client, "other-map", by: teacher)

            var codes = [live]
            for _ in 0..<19 { codes.append(try await Self.invite(client, "guess-me", by: teacher)) }
            #expect(Set(codes).count == codes.count)
            for code in codes {
                #expect(code.count == 22 && code.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }, "\(code)")
                let base64 = code.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/") + "=="
                #expect(Data(base64Encoded: base64)?.count == 16, "\(code)")
            }

            let usedUp = try await Self.invite(client, "guess-me", by: teacher, body: #"{"uses":1}"#)
            #expect(try await Self.join(client, "guess-me", code: usedUp, as: friend).status == .created)
            let revoked = try await Self.invite(client, "guess-me", by: teacher)
            #expect(try await client.send(.delete, "/v1/maps/guess-me/invites/\(revoked)", headers: [teacher.bearer]).status == .ok)
            // An invite of a minute, its minute passed: the service's clock is not the test's to move, so its
            // expiry is moved into the past where the service reads it.
            let expired = try await Self.invite(client, "guess-me", by: teacher, body: #"{"expiresIn":60}"#)
            try await withPostgresClient(try fixture.database.databaseURL, logger: TestDatabase.logger) { database in
                try await database.query(
                    "UPDATE locations.map_invites SET expires_at = now() - interval '1 second' WHERE code = \(expired)", logger: TestDatabase.logger)
            }

            var changed = Array(live)
            changed[10] = changed[10] == "A" ? "B" : "A"
            let guesses = [
                String(changed), String(live.dropLast()), live + "A", live + "=", live.uppercased(), live.lowercased(), "AAAAAAAAAAAAAAAAAAAAAA",
                "", String(live.dropLast()) + "\u{0430}", otherMaps, usedUp, revoked, expired,
            ]
            let first = try await Self.join(client, "guess-me", code: guesses[0], as: guesser)
            Self.expectRefusal(first, .notFound, 101, "No such invite.", "a wrong guess")
            for guess in guesses where guess != live {
                let reply = try await Self.join(client, "guess-me", code: guess, as: guesser)
                #expect(reply.status == first.status && reply.body == first.body, "\(guess): \(reply.status) \(reply.body)")
                let none = try await Self.join(client, Self.noMap, code: guess, as: guesser)
                #expect(none.status == first.status && none.body == first.body, "\(guess) where no map is: \(none.status) \(none.body)")
            }
            let mine = try await client.send(.get, "/v1/maps", headers: [guesser.bearer])
            #expect((mine.json["results"] as? [Any])?.isEmpty == true, "\(mine.body)")
            #expect(try await Self.join(client, "guess-me", code: live, as: guesser).status == .created)
        }
    }

    /// Joins are counted against the joining account's write allowance (not its address's: a class joins
    /// from one school's address): past the burst, guesses get 429/155 with `Retry-After`, the right code
    /// and the account's pins too, while a classmate behind the same address still joins.
    @Test func guessingInvitesIsSlowedByTheAccountsWriteLimit() async throws {
        try await withGateway(configure: { $0.writeLimit.burst = 3 }) { client, _ in
            let teacher = try await client.signedUpAndLoggedIn("teacher@example.com")
            let guesser = try await client.signedUpAndLoggedIn("guesser@example.com")
            let classmate = try await client.signedUpAndLoggedIn("classmate@example.com")
            let code = try #require(try await ClassMapTests.classMap(client, "slow-class", teacher: teacher, students: [])["code"] as? String)
            for attempt in 0..<3 {
                let guess = try await Self.join(client, "slow-class", code: "guess\(attempt)AAAAAAAAAAAAAAAAA", as: guesser)
                Self.expectRefusal(guess, .notFound, 101, "No such invite.", "guess \(attempt)")
            }
            for code in ["guess3AAAAAAAAAAAAAAAAA", code] {
                let refused = try await Self.join(client, "slow-class", code: code, as: guesser)
                Self.expectRefusal(refused, .tooManyRequests, 155, nil, "\(code) past the burst")
                #expect(refused.headers[.retryAfter] != nil)
            }
            // However the join's address is spelled: the router ignores a trailing slash, and so does the count.
            for spelling in ["members/", "members//"] {
                let refused = try await client.send(
                    .post, "/v1/maps/slow-class/\(spelling)", body: #"{"code":"\#(code)"}"#, headers: [guesser.bearer])
                Self.expectRefusal(refused, .tooManyRequests, 155, nil, "\(spelling) past the burst")
            }
            let post = try await client.send(.post, "/maps/slow-class/v1/StudentLocation", body: Self.pinBody("x"), headers: [guesser.bearer])
            Self.expectRefusal(post, .tooManyRequests, 155, nil, "a pin past the burst")
            #expect((try await client.send(.get, "/v1/maps", headers: [guesser.bearer]).json["results"] as? [Any])?.isEmpty == true)
            #expect(try await Self.join(client, "slow-class", code: code, as: classmate).status == .created)
        }
    }

    /// A member removed from a map, or a pending one turned away, cannot come back with an invite made
    /// before: it answers them as no invite, while it still lets others in; their open session reads the map
    /// as one that does not exist. An invite made after the removal lets them back.
    @Test func aRemovedMemberCannotComeBackWithAnInviteMadeBeforeTheRemoval() async throws {
        try await withGateway(configure: { $0.writeLimit.burst = 50 }) { client, _ in
            let teacher = try await client.signedUpAndLoggedIn("teacher@example.com")
            let removed = try await client.signedUpAndLoggedIn("removed@example.com")
            let turnedAway = try await client.signedUpAndLoggedIn("turned-away@example.com")
            let newcomer = try await client.signedUpAndLoggedIn("newcomer@example.com")
            let slug = "kept-out"
            let before = try #require(try await ClassMapTests.classMap(client, slug, teacher: teacher, students: [removed])["code"] as? String)
            let pin = try #require(try await Self.pin(client, on: "/maps/\(slug)", as: removed, mapString: "Removed Lima")["objectId"] as? String)
            #expect(try await client.send(.delete, "/v1/maps/\(slug)/members/\(removed.key)", headers: [teacher.bearer]).status == .ok)

            let again = try await Self.join(client, slug, code: before, as: removed)
            Self.expectRefusal(again, .notFound, 101, "No such invite.", "rejoining with the invite made before")
            for path in ["/maps/\(slug)/v1/StudentLocation", "/maps/\(slug)/v1/StudentLocation/\(pin)", "/maps/\(slug)/v1/StudentLocation/events"] {
                let reply = try await Self.expectAnsweredAsNoMap(client, .get, path, slug: slug, headers: [removed.bearer])
                Self.expectRefusal(reply, .notFound, 101, "No such map.", path)
            }
            let post = try await Self.expectAnsweredAsNoMap(
                client, .post, "/maps/\(slug)/v1/StudentLocation", slug: slug, body: Self.pinBody("Back"), headers: [removed.bearer])
            Self.expectRefusal(post, .notFound, 101, "No such map.", "posting after the removal")
            #expect(try await Self.join(client, slug, code: before, as: newcomer).status == .created)

            // A pending member turned away is removed as well.
            #expect(try await client.send(.patch, "/v1/maps/\(slug)", body: #"{"approval":true}"#, headers: [teacher.bearer]).status == .ok)
            #expect(try await Self.join(client, slug, code: before, as: turnedAway).json["role"] as? String == "pending")
            #expect(try await client.send(.delete, "/v1/maps/\(slug)/members/\(turnedAway.key)", headers: [teacher.bearer]).status == .ok)
            Self.expectRefusal(try await Self.join(client, slug, code: before, as: turnedAway), .notFound, 101, "No such invite.", "turned away")

            let after = try await Self.invite(client, slug, by: teacher)
            #expect(try await Self.join(client, slug, code: after, as: removed).status == .created)
        }
    }

    // MARK: Roles

    /// A member cannot make themself (or anyone) moderator or owner, nor run the map; a moderator cannot
    /// make themself owner, remove or demote the owner or another moderator, or change the map; a pending
    /// member reads and posts nothing. A forged `X-Actor` is not believed. Roles stay as the owner set them.
    @Test func noMemberOrModeratorCanRaiseTheirRoleOrLowerTheOwners() async throws {
        try await withGateway(configure: { $0.writeLimit.burst = 50 }) { client, _ in
            let owner = try await client.signedUpAndLoggedIn("owner@example.com")
            let moderator = try await client.signedUpAndLoggedIn("moderator@example.com")
            let colleague = try await client.signedUpAndLoggedIn("colleague@example.com")
            let member = try await client.signedUpAndLoggedIn("member@example.com")
            let classmate = try await client.signedUpAndLoggedIn("classmate@example.com")
            let pending = try await client.signedUpAndLoggedIn("pending@example.com")
            let outsider = try await client.signedUpAndLoggedIn("outsider@example.com")
            let slug = "roles-class"
            let code = try #require(
                try await ClassMapTests.classMap(client, slug, teacher: owner, students: [moderator, colleague, member, classmate])["code"] as? String
            )
            for promoted in [moderator, colleague] {
                let granted = try await client.send(
                    .put, "/v1/maps/\(slug)/members/\(promoted.key)/role", body: #"{"role":"moderator"}"#, headers: [owner.bearer])
                #expect(granted.json["role"] as? String == "moderator")
            }
            #expect(try await client.send(.patch, "/v1/maps/\(slug)", body: #"{"approval":true}"#, headers: [owner.bearer]).status == .ok)
            #expect(try await Self.join(client, slug, code: code, as: pending).json["role"] as? String == "pending")
            let pin = try #require(try await Self.pin(client, on: "/maps/\(slug)", as: member, mapString: "Member Lima")["objectId"] as? String)
            func role(_ key: String, _ role: String) -> (HTTPRequest.Method, String, String?) {
                (.put, "/v1/maps/\(slug)/members/\(key)/role", #"{"role":"\#(role)"}"#)
            }

            let members = "Only the map's moderators may do this."
            let owners = "Only the map's owner may do this."
            let roles = "Only the map's owner may change roles."
            let attempts: [(Student, [(HTTPRequest.Method, String, String?)], String)] = [
                (
                    member,
                    [
                        role(member.key, "moderator"), role(member.key, "owner"), role(classmate.key, "moderator"),
                        (.delete, "/v1/maps/\(slug)/members/\(classmate.key)", nil), (.delete, "/v1/maps/\(slug)/members/\(owner.key)", nil),
                        (.post, "/v1/maps/\(slug)/invites", nil), (.get, "/v1/maps/\(slug)/members", nil), (.get, "/v1/maps/\(slug)/hidden", nil),
                    ], members
                ),
                (member, [(.patch, "/v1/maps/\(slug)", #"{"approval":false}"#), (.delete, "/v1/maps/\(slug)", nil)], owners),
                (
                    moderator,
                    [
                        role(moderator.key, "owner"), role(owner.key, "member"), role(owner.key, "moderator"), role(colleague.key, "member"),
                        role(member.key, "moderator"), role(pending.key, "moderator"),
                    ], roles
                ),
                (moderator, [(.delete, "/v1/maps/\(slug)/members/\(owner.key)", nil)], "The owner cannot be removed from their map."),
                (moderator, [(.delete, "/v1/maps/\(slug)/members/\(colleague.key)", nil)], "Only the map's owner may remove a moderator."),
                (moderator, [(.patch, "/v1/maps/\(slug)", #"{"read":"public"}"#), (.delete, "/v1/maps/\(slug)", nil)], owners),
            ]
            for (attacker, requests, message) in attempts {
                for (method, path, body) in requests {
                    let reply = try await client.send(method, path, body: body, headers: [attacker.bearer])
                    Self.expectRefusal(reply, .forbidden, 119, message, "\(attacker.email): \(method) \(path) \(body ?? "")")
                }
            }
            // A join asking for a role gets the invite's; the owner's identity in `X-Actor` is dropped.
            let rejoined = try await client.send(
                .post, "/v1/maps/\(slug)/members", body: #"{"code":"\#(code)","role":"owner"}"#, headers: [member.bearer])
            #expect(rejoined.status == .ok && rejoined.json["role"] as? String == "member", "\(rejoined.body)")
            let forged = HTTPField(name: HTTPField.Name(InternalHeaders.actor)!, value: owner.actor.headerValue)
            let asOwner = try await client.send(
                .put, "/v1/maps/\(slug)/members/\(outsider.key)/role", body: #"{"role":"owner"}"#, headers: [outsider.bearer, forged])
            Self.expectRefusal(asOwner, .notFound, 101, "No such map.", "an outsider claiming the owner's X-Actor")
            let anonymous = try await client.send(.put, "/v1/maps/\(slug)/members/\(member.key)/role", body: #"{"role":"owner"}"#, headers: [forged])
            Self.expectRefusal(anonymous, .unauthorized, 209, nil, "no session, the owner's X-Actor")

            // The pending member: nothing to read, nothing to post, no approving themself.
            let pendingTries: [(HTTPRequest.Method, String, String?)] = [
                (.get, "/maps/\(slug)/v1/StudentLocation", nil), (.get, "/maps/\(slug)/v1/StudentLocation/\(pin)", nil),
                (.get, "/maps/\(slug)/v1/StudentLocation/events", nil), (.post, "/maps/\(slug)/v1/StudentLocation", Self.pinBody("Pending")),
                role(pending.key, "member"), (.post, "/v1/maps/\(slug)/invites", nil), (.get, "/v1/maps/\(slug)/members", nil),
            ]
            for (method, path, body) in pendingTries {
                let reply = try await Self.expectAnsweredAsNoMap(client, method, path, slug: slug, body: body, headers: [pending.bearer])
                Self.expectRefusal(reply, .notFound, 101, "No such map.", "pending: \(method) \(path)")
            }

            let after = try await client.send(.get, "/v1/maps/\(slug)/members", headers: [owner.bearer])
            let held = Dictionary(
                uniqueKeysWithValues: (after.json["results"] as? [[String: Any]] ?? []).compactMap { entry in
                    (entry["key"] as? String).map { ($0, entry["role"] as? String ?? "") }
                })
            #expect(
                held == [
                    owner.key: "owner", moderator.key: "moderator", colleague.key: "moderator", member.key: "member", classmate.key: "member",
                    pending.key: "pending",
                ])
            #expect(try await client.send(.get, "/v1/maps/\(slug)", headers: [owner.bearer]).json["approval"] as? Bool == true)
            // What a moderator may do, they still can: approve a pending member.
            let approved = try await client.send(
                .put, "/v1/maps/\(slug)/members/\(pending.key)/role", body: #"{"role":"member"}"#, headers: [moderator.bearer])
            #expect(approved.status == .ok && approved.json["role"] as? String == "member", "\(approved.body)")
        }
    }

    // MARK: Slugs

    /// A slug is refused at creation unless written as the rule says, and reserved words are refused; in a
    /// path, any other spelling of a map's slug (percent-encoded, upper case, `..`, a trailing dot, a double
    /// hyphen, look-alike letters, too long) or a reserved word names no map: the bytes a map that does not
    /// exist answers, for reads, writes, the live stream and the map's API, and no pin changes.
    @Test func aSlugSpelledAnyOtherWayIsRefusedAtCreationAndNamesNoMapInAPath() async throws {
        try await withGateway(configure: { $0.writeLimit.burst = 1000 }) { client, _ in
            let teacher = try await client.signedUpAndLoggedIn("teacher@example.com")
            let student = try await client.signedUpAndLoggedIn("student@example.com")
            let outsider = try await client.signedUpAndLoggedIn("outsider@example.com")
            let code = try #require(try await ClassMapTests.classMap(client, "ios-2027", teacher: teacher, students: [student])["code"] as? String)
            let pin = try #require(try await Self.pin(client, on: "/maps/ios-2027", as: student, mapString: "Class Lima")["objectId"] as? String)
            let onDefault = try #require(try await Self.pin(client, on: "", as: student, mapString: "Default Lima")["objectId"] as? String)

            let cyrillic = "i\u{043E}s-2027"
            let fullwidth = "\u{FF49}\u{FF4F}\u{FF53}-2027"
            let shapes = [
                "ios%2D2027", "%69os-2027", "IOS-2027", "Ios-2027", "..", ".", "ios-2027.", ".ios-2027", "ios--2027", "-ios-2027", "ios-2027-",
                cyrillic, fullwidth, "ios-2027\u{200B}", "ios 2027", "ios/2027", "ios_2027", "io", String(repeating: "a", count: 41),
            ]
            // The last two as JSON escapes of the look-alike letters.
            for slug in shapes + ["i\\u043es-2027", "\\uff49\\uff4f\\uff53-2027"] {
                let refused = try await client.send(.post, "/v1/maps", body: #"{"slug":"\#(slug)","name":"Look-alike"}"#, headers: [student.bearer])
                Self.expectRefusal(refused, .badRequest, 142, MapSlug.rule, "creating \(slug)")
            }
            for word in MapSlug.reserved {
                let refused = try await client.send(.post, "/v1/maps", body: #"{"slug":"\#(word)","name":"Reserved"}"#, headers: [student.bearer])
                Self.expectRefusal(refused, .badRequest, 142, nil, "creating \(word)")
            }
            let created = try await client.send(.get, "/v1/maps", headers: [student.bearer])
            #expect((created.json["results"] as? [[String: Any]])?.compactMap { $0["slug"] as? String } == ["ios-2027"])

            let spellings = [
                "ios%2D2027", "ios%2d2027", "%69os-2027", "%69%6F%73%2D%32%30%32%37", "IOS-2027", "Ios-2027", "..", "%2E%2E", ".", "ios-2027.",
                "ios-2027%2E", "ios--2027", "i%D0%BEs-2027", "%EF%BD%89%EF%BD%8F%EF%BD%93-2027", "ios-2027%E2%80%8B", "ios-2027%00", "ios-2027%20",
                String(repeating: "a", count: 41), String(repeating: "ios-", count: 20) + "2027", "default", "maps", "join", "new", "admin",
            ]
            func requests(_ spelling: String) -> [(HTTPRequest.Method, String, String?)] {
                let base = "/maps/\(spelling)"
                return [
                    (.get, "\(base)/v1/StudentLocation", nil), (.get, "\(base)/parse/classes/StudentLocation", nil),
                    (.get, "\(base)/v1/StudentLocation/\(pin)", nil), (.get, "\(base)/v1/StudentLocation/\(onDefault)", nil),
                    (.get, "\(base)/v1/StudentLocation/\(pin)/history", nil), (.get, "\(base)/v1/StudentLocation.geojson", nil),
                    (.get, "\(base)/v1/StudentLocation/events", nil), (.post, "\(base)/v1/StudentLocation", Self.pinBody("Spelled")),
                    (.put, "\(base)/v1/StudentLocation/\(pin)", #"{"mapString":"Spelled"}"#),
                    (.put, "\(base)/1/classes/StudentLocation/\(onDefault)", #"{"mapString":"Spelled"}"#),
                    (.delete, "\(base)/v1/StudentLocation/\(pin)", nil), (.delete, "\(base)/v1/StudentLocation/\(onDefault)", nil),
                    (.post, "\(base)/v1/StudentLocation/\(pin)/hide", #"{"reason":"spelled"}"#), (.get, "/v1/maps/\(spelling)", nil),
                    (.get, "/v1/maps/\(spelling)/members", nil), (.post, "/v1/maps/\(spelling)/invites", nil),
                    (.patch, "/v1/maps/\(spelling)", #"{"name":"Spelled"}"#),
                ]
            }
            for spelling in spellings {
                for ((method, path, body), (_, elsewhere, _)) in zip(requests(spelling), requests(Self.noMap)) {
                    let reply = try await client.send(method, path, body: body, headers: [teacher.bearer])
                    let none = try await client.send(method, elsewhere, body: body, headers: [teacher.bearer])
                    let what = "\(method) \(path)"
                    #expect(reply.status == .notFound, "\(what): \(reply.status) \(reply.body)")
                    #expect(reply.status == none.status && reply.body == none.body, "\(what): \(reply.body), where no map is: \(none.body)")
                    #expect(!reply.body.contains("Lima"), "\(what): \(reply.body)")
                }
                // The map's invite, sent to a spelling of its slug, lets no one in.
                Self.expectRefusal(try await Self.join(client, spelling, code: code, as: outsider), .notFound, 101, nil, "joining \(spelling)")
            }
            #expect((try await client.send(.get, "/v1/maps", headers: [outsider.bearer]).json["results"] as? [Any])?.isEmpty == true)
            #expect(try await Self.pinState(client, "/maps/ios-2027", pin, as: student) == ("Class Lima", 1))
            #expect(try await Self.pinState(client, "", onDefault, as: student) == ("Default Lima", 1))
            let hidden = try await client.send(.get, "/v1/maps/ios-2027/hidden", headers: [teacher.bearer])
            #expect((hidden.json["results"] as? [Any])?.isEmpty == true)
            #expect(
                (try await client.send(.get, "/maps/ios-2027/v1/StudentLocation", headers: [student.bearer]).json["results"] as? [Any])?.count == 1)
            #expect(try await client.send(.get, "/v1/maps/ios-2027", headers: [teacher.bearer]).json["name"] as? String == "Class ios-2027")
        }
    }

    /// A deleted map's slug is never given again, to another account or to its owner, so nobody inherits its
    /// address, its members' apps or its invites; its invite and its old pin's address answer as no map.
    @Test func aDeletedMapsSlugIsNotGivenToAnyoneAndItsInviteLetsNoOneIn() async throws {
        try await withGateway(configure: { $0.writeLimit.burst = 50 }) { client, _ in
            let teacher = try await client.signedUpAndLoggedIn("teacher@example.com")
            let student = try await client.signedUpAndLoggedIn("student@example.com")
            let squatter = try await client.signedUpAndLoggedIn("squatter@example.com")
            let slug = "old-class"
            let code = try #require(try await ClassMapTests.classMap(client, slug, teacher: teacher, students: [student])["code"] as? String)
            let pin = try #require(try await Self.pin(client, on: "/maps/\(slug)", as: student, mapString: "Old Lima")["objectId"] as? String)
            #expect(try await client.send(.delete, "/v1/maps/\(slug)", headers: [teacher.bearer]).status == .ok)

            for creator in [squatter, teacher] {
                for read in ["public", "members"] {
                    let taken = try await client.send(
                        .post, "/v1/maps", body: #"{"slug":"\#(slug)","name":"Mine now","read":"\#(read)","post":"signedIn"}"#,
                        headers: [creator.bearer])
                    Self.expectRefusal(taken, .conflict, 137, "A map called \(slug) exists already.", "\(creator.email) re-creating \(slug)")
                }
            }
            let join = try await Self.join(client, slug, code: code, as: squatter)
            let none = try await Self.join(client, Self.noMap, code: code, as: squatter)
            #expect(join.status == .notFound && join.body == none.body, "\(join.body)")
            for caller in [squatter, student, teacher] {
                for path in ["/maps/\(slug)/v1/StudentLocation", "/maps/\(slug)/v1/StudentLocation/\(pin)", "/v1/maps/\(slug)"] {
                    let reply = try await Self.expectAnsweredAsNoMap(client, .get, path, slug: slug, headers: [caller.bearer])
                    Self.expectRefusal(reply, .notFound, 101, "No such map.", "\(caller.email) GET \(path)")
                }
                #expect((try await client.send(.get, "/v1/maps", headers: [caller.bearer]).json["results"] as? [Any])?.isEmpty == true)
            }
        }
    }
}
