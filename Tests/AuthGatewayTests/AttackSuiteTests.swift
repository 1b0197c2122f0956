import Foundation
import HTTPTypes
import HummingbirdTesting
import OnTheMapShared
import TestSupport
import Testing

@testable import AuthGateway
@testable import ServiceTwins

/// Attacks an outsider would try against the public gateway, each named, each asserting the refusal a
/// client sees and that nothing was written: the whole list, read past the gateway's cache, is unchanged.
@Suite struct AttackSuiteTests {
    static let mounts = ["/v1/StudentLocation", "/parse/classes/StudentLocation", "/1/classes/StudentLocation"]

    /// Every pin as the service holds it, with its `updatedAt`: any write at all changes this text.
    static func everything(_ client: any TestClientProtocol) async throws -> String {
        let reply = try await client.send(.get, "/v1/StudentLocation?limit=1000")
        #expect(reply.status == .ok)
        return reply.body
    }

    /// A world with one student's pin in it, and another student with a session of their own.
    static func withOwnerAndIntruder(
        _ body: @escaping @Sendable (any TestClientProtocol, _ owner: Student, _ intruder: Student, _ pinID: String) async throws -> Void
    ) async throws {
        // The intruder tries more writes than the write limit lets through: each is to be refused for what
        // it is, not for their number (the flood itself is `WriteLimitTests`'), so the limit is raised here.
        try await withGatewaySocket(configure: { $0.writeLimit.burst = 1_000 }) { client, _ in
            let owner = try await client.signedUpAndLoggedIn("owner@example.com", firstName: "Ada", lastName: "Lovelace")
            let intruder = try await client.signedUpAndLoggedIn("intruder@example.com", firstName: "Mallory", lastName: "Evil")
            let id = try await client.postPin(as: owner)
            try await body(client, owner, intruder, id)
        }
    }

    static func isParseError(_ reply: Reply, status: HTTPResponse.Status, code: Int) -> Bool {
        reply.status == status && reply.json["code"] as? Int == code && reply.json["error"] is String
    }

    @Test func identityForgedInTheBodyOrInAnXActorHeaderIsIgnored() async throws {
        try await Self.withOwnerAndIntruder { client, owner, intruder, id in
            let forgedActor = HTTPField(name: HTTPField.Name(InternalHeaders.actor)!, value: owner.actor.headerValue)
            let posted = try await client.send(
                .post, "/v1/StudentLocation",
                body: """
                    {"uniqueKey":"\(owner.key)","firstName":"Ada","lastName":"Lovelace","mapString":"Fake","mediaURL":"https://evil.example","latitude":1,"longitude":1}
                    """, headers: [intruder.bearer, forgedActor])
            let postedID = try #require(posted.json["objectId"] as? String)
            let stored = try await client.send(.get, "/v1/StudentLocation/\(postedID)")
            #expect(stored.json["uniqueKey"] as? String == intruder.key)
            #expect(stored.json["firstName"] as? String == "Mallory")

            let before = try await Self.everything(client)
            let edit = try await client.send(
                .put, "/v1/StudentLocation/\(id)", body: #"{"mapString":"Hijacked"}"#, headers: [intruder.bearer, forgedActor])
            #expect(Self.isParseError(edit, status: .forbidden, code: 119))
            let anonymous = try await client.send(.post, "/v1/StudentLocation", body: TestPin.json, headers: [forgedActor])
            #expect(Self.isParseError(anonymous, status: .unauthorized, code: 209), "an actor header is no session")
            #expect(try await Self.everything(client) == before)
        }
    }

    @Test func anotherStudentsPinCannotBeChangedOrDeletedThroughAnyPathAlias() async throws {
        try await Self.withOwnerAndIntruder { client, _, intruder, id in
            let before = try await Self.everything(client)
            for mount in Self.mounts {
                let edit = try await client.send(.put, "\(mount)/\(id)", body: #"{"mapString":"Hijacked"}"#, headers: [intruder.bearer])
                #expect(Self.isParseError(edit, status: .forbidden, code: 119), "PUT \(mount): \(edit.status) \(edit.body)")
                let delete = try await client.send(.delete, "\(mount)/\(id)", headers: [intruder.bearer])
                #expect(Self.isParseError(delete, status: .forbidden, code: 119), "DELETE \(mount): \(delete.status) \(delete.body)")
            }
            #expect(try await Self.everything(client) == before)
        }
    }

    @Test func missingGarbageRevokedAndQueryStringTokensAre401AndWriteNothing() async throws {
        try await Self.withOwnerAndIntruder { client, owner, _, id in
            var revoked = try await client.logIn(owner)
            let logout = try await client.send(.delete, "/v1/session", headers: [revoked.bearer])
            #expect(logout.status == .ok)
            let before = try await Self.everything(client)
            let credentials: [(String, [HTTPField])] = [
                ("none", []),
                ("empty bearer", [HTTPField(name: .authorization, value: "Bearer ")]),
                ("garbage", [HTTPField(name: .authorization, value: "Bearer not-a-token")]),
                ("10 KB", [HTTPField(name: .authorization, value: "Bearer " + String(repeating: "A", count: 10_000))]),
                ("another scheme", [HTTPField(name: .authorization, value: "Basic \(owner.token)")]),
                ("revoked", [revoked.bearer]),
                ("revoked cookie", [HTTPField(name: .cookie, value: "onthemap_session=\(revoked.token)")]),
            ]
            for (name, headers) in credentials {
                let post = try await client.send(.post, "/v1/StudentLocation", body: TestPin.json, headers: headers)
                #expect(Self.isParseError(post, status: .unauthorized, code: 209), "POST with \(name): \(post.status)")
                let delete = try await client.send(.delete, "/v1/StudentLocation/\(id)", headers: headers)
                #expect(Self.isParseError(delete, status: .unauthorized, code: 209), "DELETE with \(name): \(delete.status)")
            }
            // A live token in the query string is not a credential: URLs end up in logs and histories.
            revoked = try await client.logIn(owner)
            for parameter in ["sessionToken", "session", "token", "access_token"] {
                let post = try await client.send(.post, "/v1/StudentLocation?\(parameter)=\(revoked.token)", body: TestPin.json)
                #expect(Self.isParseError(post, status: .unauthorized, code: 209), "?\(parameter)=: \(post.status)")
            }
            #expect(try await Self.everything(client) == before)
        }
    }

    @Test func crossSiteWritesCarryingTheSessionCookieAreRefused() async throws {
        try await Self.withOwnerAndIntruder { client, owner, _, id in
            let cookie = HTTPField(name: .cookie, value: "onthemap_session=\(owner.token); XSRF-TOKEN=abc")
            let xsrf = HTTPField(name: HTTPField.Name("X-XSRF-TOKEN")!, value: "abc")
            let before = try await Self.everything(client)
            let sites = [
                HTTPField(name: HTTPField.Name("Origin")!, value: "https://evil.example"),
                HTTPField(name: HTTPField.Name("Origin")!, value: "null"),
                HTTPField(name: HTTPField.Name("Sec-Fetch-Site")!, value: "cross-site"),
            ]
            for site in sites {
                let post = try await client.send(.post, "/v1/StudentLocation", body: TestPin.json, headers: [cookie, xsrf, site])
                #expect(Self.isParseError(post, status: .forbidden, code: 119), "POST from \(site.value): \(post.status)")
                let edit = try await client.send(.put, "/v1/StudentLocation/\(id)", body: #"{"mapString":"CSRF"}"#, headers: [cookie, xsrf, site])
                #expect(Self.isParseError(edit, status: .forbidden, code: 119), "PUT from \(site.value): \(edit.status)")
                let delete = try await client.send(.delete, "/v1/StudentLocation/\(id)", headers: [cookie, xsrf, site])
                #expect(Self.isParseError(delete, status: .forbidden, code: 119), "DELETE from \(site.value): \(delete.status)")
            }
            #expect(try await Self.everything(client) == before)
        }
    }

    @Test func injectionThroughEveryQueryParameterAndPathSegmentReadsNothingItShouldNot() async throws {
        try await Self.withOwnerAndIntruder { client, _, _, _ in
            let before = try await Self.everything(client)
            let injections = [
                "where=" + #"{"uniqueKey":"' OR '1'='1"}"#, "where=" + #"{"uniqueKey":{"$ne":"x"}}"#,
                "where=%27%3B%20DROP%20TABLE%20locations.events%3B%20--", "uniqueKey=' OR '1'='1",
                "uniqueKey=x%27%3B%20DELETE%20FROM%20locations.pins%3B%20--", "order=updatedAt;DROP TABLE locations.events",
                "order=(SELECT 1)", "limit=1;DELETE FROM locations.pins", "limit=-1", "skip=1 OR 1=1", "skip=99999999999999999999999",
            ]
            for query in injections {
                let encoded =
                    query.addingPercentEncoding(withAllowedCharacters: .urlQueryAllowed.subtracting(CharacterSet(charactersIn: "+&"))) ?? query
                let reply = try await client.send(.get, "/v1/StudentLocation?" + encoded)
                #expect(
                    reply.status == .ok || Self.isParseError(reply, status: .badRequest, code: reply.json["code"] as? Int ?? -1),
                    "\(query): \(reply.status) \(reply.body)")
                // A filter's text is compared as a value, so it matches nobody; an unknown sort key is ignored
                // (clients send the typo `-updateAt`), which leaves the newest-first list.
                if reply.status == .ok, query.hasPrefix("where") || query.hasPrefix("uniqueKey") {
                    #expect((reply.json["results"] as? [Any])?.isEmpty == true, "\(query) matched pins")
                }
            }
            for segment in ["'%20OR%201=1", "x%27%3B%20DELETE%20FROM%20locations.pins", "%00", String(repeating: "a", count: 5000)] {
                let reply = try await client.send(.get, "/v1/StudentLocation/\(segment)")
                #expect(reply.status == .notFound || reply.status == .badRequest, "\(segment.prefix(40)): \(reply.status)")
            }
            #expect(try await Self.everything(client) == before)
        }
    }

    @Test func methodOverridesAreNotObeyed() async throws {
        try await Self.withOwnerAndIntruder { client, owner, intruder, id in
            let before = try await Self.everything(client)
            for student in [intruder, owner] {
                let override = HTTPField(name: HTTPField.Name("X-HTTP-Method-Override")!, value: "DELETE")
                let method = HTTPField(name: HTTPField.Name("X-HTTP-Method")!, value: "DELETE")
                let get = try await client.send(.get, "/v1/StudentLocation/\(id)", headers: [student.bearer, override, method])
                #expect(get.status == .ok, "a GET stays a read")
                let post = try await client.send(.post, "/v1/StudentLocation/\(id)?_method=DELETE", body: "{}", headers: [student.bearer, override])
                #expect(post.status != .ok)
            }
            #expect(try await Self.everything(client) == before)
        }
    }

    @Test func oversizedAndMalformedBodiesAreRefusedInParseShapeAndWriteNothing() async throws {
        try await Self.withOwnerAndIntruder { client, _, intruder, id in
            let before = try await Self.everything(client)
            let bodies: [(String, String, HTTPResponse.Status)] = [
                ("deep nesting", String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000), .contentTooLarge),
                ("deep nesting within the size limit", String(repeating: "[", count: 5_000) + String(repeating: "]", count: 5_000), .badRequest),
                ("a huge latitude", #"{"mapString":"x","mediaURL":"https://x.com","latitude":1e999,"longitude":1}"#, .badRequest),
                (
                    "a 400-digit longitude",
                    #"{"mapString":"x","mediaURL":"https://x.com","latitude":1,"longitude":"# + String(repeating: "9", count: 400) + "}", .badRequest
                ),
                ("not JSON", "mapString=x", .badRequest),
                ("an array", "[]", .badRequest),
                (
                    "20 KiB of text",
                    #"{"mapString":""# + String(repeating: "x", count: 20_000) + #"","mediaURL":"https://x.com","latitude":1,"longitude":1}"#,
                    .contentTooLarge
                ),
            ]
            for (name, body, status) in bodies {
                for (method, path) in [(HTTPRequest.Method.post, "/v1/StudentLocation"), (.put, "/v1/StudentLocation/\(id)")] {
                    let reply = try await client.send(method, path, body: body, headers: [intruder.bearer])
                    let expected = method == .put && status == .badRequest ? [HTTPResponse.Status.badRequest, .forbidden] : [status]
                    #expect(
                        expected.contains(reply.status) && reply.json["code"] is Int, "\(method) \(name): \(reply.status) \(reply.body.prefix(200))")
                }
            }
            // Invalid UTF-8 can only be sent as raw bytes.
            let connection = try RawConnection(port: client.port!)
            let head = "POST /v1/StudentLocation HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(intruder.token)\r\nContent-Type: application/json\r\n"
            let body: [UInt8] =
                Array(#"{"mapString":""#.utf8) + [0xC3, 0x28, 0xFF] + Array(#"","mediaURL":"https://x.com","latitude":1,"longitude":1}"#.utf8)
            try connection.send(bytes: Array((head + "Content-Length: \(body.count)\r\n\r\n").utf8) + body)
            let answer = try await connection.receiveResponse()
            #expect(answer.hasPrefix("HTTP/1.1 400"), "\(answer.prefix(200))")
            #expect(try await Self.everything(client) == before)
        }
    }

    @Test func smuggledRequestsAreRefusedAndWriteNothing() async throws {
        try await Self.withOwnerAndIntruder { client, owner, _, id in
            let before = try await Self.everything(client)
            // The owner's own delete, hidden in a body: were it ever read as a request, the pin would go.
            let inner = "DELETE /v1/StudentLocation/\(id) HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(owner.token)\r\n\r\n"
            let attempts = [
                // Content-Length and Transfer-Encoding together: which one frames the body?
                "POST /v1/StudentLocation HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + inner,
                // Two lengths that disagree.
                "POST /v1/StudentLocation HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nContent-Length: \(inner.utf8.count)\r\n\r\n" + inner,
                // A chunk size that is not a number.
                "POST /v1/StudentLocation HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n" + inner,
                // An obfuscated Transfer-Encoding.
                "POST /v1/StudentLocation HTTP/1.1\r\nHost: x\r\nTransfer-Encoding : chunked\r\nContent-Length: 0\r\n\r\n" + inner,
            ]
            for attempt in attempts {
                let connection = try RawConnection(port: client.port!)
                try connection.send(attempt)
                let answer = try await connection.receiveResponse()
                #expect(answer.isEmpty || answer.hasPrefix("HTTP/1.1 400"), "\(attempt.prefix(90)): \(answer.prefix(120))")
                #expect(await connection.closedByPeer(within: .seconds(3)) != nil, "the connection is closed after the refusal")
            }
            #expect(try await Self.everything(client) == before)
        }
    }

    @Test func overlongPathSegmentsQueryValuesAndHeadersAreRefusedNeverA500() async throws {
        try await Self.withOwnerAndIntruder { client, _, intruder, _ in
            let long = String(repeating: "a", count: 6_000)
            let attempts: [(HTTPRequest.Method, String, [HTTPField])] = [
                (.get, "/v1/users/\(long)", []),
                (.get, "/api/users/\(long)", []),
                (.get, "/v1/geocode?q=\(long)", []),
                (.get, "/v1/StudentLocation/\(long)", []),
                (.get, "/v1/StudentLocation?where=\(long)", []),
                (.get, "/v1/StudentLocation/events?lastEventId=\(long)", []),
                (.post, "/v1/StudentLocation", [intruder.bearer, HTTPField(name: HTTPField.Name("Idempotency-Key")!, value: long)]),
            ]
            for (method, path, headers) in attempts {
                let reply: Reply
                if path.hasSuffix("/events?lastEventId=\(long)") {
                    // A stream that starts is fine too; read only its head.
                    let connection = try RawConnection(port: client.port!)
                    try connection.send("GET \(path) HTTP/1.1\r\nHost: x\r\n\r\n")
                    let head = try await connection.receiveHead()
                    #expect(!head.hasPrefix("HTTP/1.1 5"), "\(head.prefix(60))")
                    continue
                }
                reply = try await client.send(method, path, body: method == .post ? TestPin.json : nil, headers: headers)
                #expect((400..<500).contains(reply.status.code), "\(method) \(path.prefix(50)): \(reply.status) \(reply.body.prefix(120))")
            }
        }
    }
}

extension TimedGatewayTests {
    @Test func slowClientsAndIdleOnesAreCutOffWhileANormalClientIsServedWithinASecond() async throws {
        try await withGatewaySocket(configure: {
            $0.limits.headerTimeout = .seconds(1)
            $0.limits.idleTimeout = .seconds(2)
        }) { client, _ in
            _ = try await client.send(.get, "/v1/StudentLocation")
            let idle = try (0..<20).map { _ in try RawConnection(port: client.port!) }
            let slow = try (0..<20).map { _ in try RawConnection(port: client.port!) }
            let started = ContinuousClock.now
            // The slow ones send a header byte every 200 ms; meanwhile a student keeps reading the list.
            for _ in 0..<15 {
                for connection in slow { try? connection.send("G") }
                let asked = ContinuousClock.now
                let reply = try await client.send(.get, "/v1/StudentLocation")
                #expect(reply.status == .ok)
                #expect(ContinuousClock.now - asked < .seconds(1))
                // real time: the gateway's header and idle timeouts run on its own clock, which a test cannot drive.
                try await Task.sleep(for: .milliseconds(200))
            }
            let slowClosed = try await blocking { slow.map { $0.closedByPeer(within: .milliseconds(100)) != nil } }
            let idleClosed = try await blocking { idle.map { $0.closedByPeer(within: .seconds(2)) != nil } }
            #expect(slowClosed.allSatisfy { $0 }, "slow heads still open after \(ContinuousClock.now - started)")
            #expect(idleClosed.allSatisfy { $0 }, "idle connections still open after \(ContinuousClock.now - started)")
        }
    }
}
