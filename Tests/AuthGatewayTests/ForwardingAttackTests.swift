import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import NIOHTTP1
import OnTheMapShared
import TestSupport
import Testing

@testable import AuthGateway
@testable import ServiceTwins

/// The gateway forwards only the public API it documents: nothing of locations-service's internal API is
/// reachable through it, whatever the spelling, and nothing a client sends can change what the service is
/// told beyond that.
@Suite struct ForwardingAttackTests {
    static let unknownPin = #"{"code":101,"error":"Object not found."}"#

    /// The service's change feed, spelled every way a path can be, and what the gateway answers to each.
    static let changeFeedReads: [(method: String, path: String, status: String, body: String)] = [
        ("GET", "/v1/StudentLocation/changes", "404 Not Found", unknownPin),
        ("GET", "/v1/StudentLocation/changes?after=0-0&wait=30", "404 Not Found", unknownPin),
        ("GET", "/v1/StudentLocation/%63hanges?after=0-0", "404 Not Found", unknownPin),
        ("GET", "/v1/StudentLocation/changes/", "404 Not Found", unknownPin),
        ("GET", "/v1/StudentLocation//changes", "404 Not Found", unknownPin),
        ("GET", "//v1//StudentLocation/changes", "404 Not Found", unknownPin),
        ("GET", "/v1/StudentLocation/changes%3Fafter=0-0", "404 Not Found", unknownPin),
        ("GET", "/v1/StudentLocation/..%2fStudentLocation%2fchanges", "404 Not Found", unknownPin),
        (
            "GET", "/v1/StudentLocation/%2e%2e/StudentLocation/changes", "404 Not Found",
            #"{"status":404,"error":"No route for GET /v1/StudentLocation/%2e%2e/StudentLocation/changes."}"#
        ),
        ("GET", "/v1/StudentLocation/x/../changes", "404 Not Found", #"{"status":404,"error":"No route for GET /v1/StudentLocation/x/../changes."}"#),
        ("GET", "http://127.0.0.1/v1/StudentLocation/changes?after=0-0", "404 Not Found", unknownPin),
        ("GET", "/parse/classes/StudentLocation/changes?after=0-0", "404 Not Found", unknownPin),
        ("GET", "/1/classes/StudentLocation/changes?after=0-0", "404 Not Found", unknownPin),
        (
            "OPTIONS", "/v1/StudentLocation/changes", "405 Method Not Allowed",
            #"{"status":405,"error":"OPTIONS is not allowed on /v1/StudentLocation/changes."}"#
        ),
        (
            "PATCH", "/v1/StudentLocation/changes", "405 Method Not Allowed",
            #"{"status":405,"error":"PATCH is not allowed on /v1/StudentLocation/changes."}"#
        ),
    ]

    /// Every spelling is refused, in the answer the table gives, and shows nothing of the log.
    func expectChangeFeedRefused(port: Int, _ when: String) async throws {
        for read in Self.changeFeedReads {
            let answer = try await rawExchange(.keepAlive, read.method, read.path, body: "", port: port)
            #expect(answer.status.hasSuffix(read.status), "\(when) \(read.method) \(read.path): \(answer.status)")
            #expect(answer.body == read.body, "\(when) \(read.method) \(read.path)")
            #expect(!answer.body.contains("cursor"), "\(when) \(read.method) \(read.path)")
        }
        // A HEAD is answered as its GET: the same refusal, without the body.
        let head = try await rawExchange(.closing, "HEAD", "/v1/StudentLocation/changes", body: "", port: port)
        #expect(head.status.hasSuffix("404 Not Found") && head.body.isEmpty, "\(when) HEAD: \(head.status) \(head.body)")
    }

    @Test func theServicesChangeFeedIsUnreachableThroughTheGatewayInAnySpelling() async throws {
        try await withGatewaySocket { client, locations in
            let port = try #require(client.port)
            let student = try await client.signedUpAndLoggedIn("feed@example.com")
            _ = try await client.postPin(as: student)
            let before = try await client.send(.get, "/v1/StudentLocation?limit=5").body
            try await expectChangeFeedRefused(port: port, "service up")
            for path in [
                "/v1/StudentLocation/changes", "/v1/StudentLocation/%63hanges", "/v1/StudentLocation/changes/",
                "/v1/StudentLocation//changes", "/parse/classes/StudentLocation/changes", "/1/classes/StudentLocation/changes",
            ] {
                for framing in Framing.allCases {
                    for method in ["PUT", "DELETE"] {
                        let answer = try await rawExchange(
                            framing, method, path, body: TestPin.json,
                            headers: ["Authorization: Bearer \(student.token)"], port: port)
                        #expect(answer.status.hasSuffix("404 Not Found"), "\(framing) \(method) \(path): \(answer.status)")
                        #expect(answer.body == Self.unknownPin, "\(framing) \(method) \(path)")
                    }
                }
            }
            #expect(try await client.send(.get, "/v1/StudentLocation?limit=5").body == before)

            // With the service gone, a request the gateway forwarded would be a 503: the same answers show
            // that none of them was forwarded.
            locations.traffic.stop()
            try await expectChangeFeedRefused(port: port, "service down")
        }
    }

    @Test func aMalformedObjectIdIs404WithoutAskingTheService() async throws {
        try await withGatewaySocket { client, locations in
            let port = try #require(client.port)
            let student = try await client.signedUpAndLoggedIn("ids@example.com")
            locations.traffic.stop()
            let askedBefore = locations.traffic.asked.count
            let bearer = "Authorization: Bearer \(student.token)"
            let malformed = [
                "abc", "CDHfAy8sd", "CDHfAy8sdp1", "CDHfAy8sd-", "CDHfAy8sd_", "%43DHfAy8sdp", String(repeating: "A", count: 300),
                "..", "%2e%2e",
            ]
            for id in malformed {
                for base in ["/v1/StudentLocation/", "/parse/classes/StudentLocation/", "/1/classes/StudentLocation/"] {
                    let read = try await rawExchange(.keepAlive, "GET", base + id, body: "", port: port)
                    #expect(
                        read.status.hasSuffix("404 Not Found") && read.body == Self.unknownPin,
                        "GET \(base)\(id.prefix(12)): \(read.status) \(read.body)")
                    for framing in [Framing.keepAlive, .http10] {
                        for method in ["PUT", "DELETE"] {
                            let write = try await rawExchange(framing, method, base + id, body: TestPin.json, headers: [bearer], port: port)
                            #expect(
                                write.status.hasSuffix("404 Not Found") && write.body == Self.unknownPin,
                                "\(framing) \(method) \(base)\(id.prefix(12)): \(write.status) \(write.body)")
                        }
                    }
                }
            }
            // A well-formed id is the service's to answer, and it is down.
            let wellFormed = try await rawExchange(.keepAlive, "GET", "/v1/StudentLocation/CDHfAy8sdp", body: "", port: port)
            #expect(wellFormed.status.hasSuffix("503 Service Unavailable"), "\(wellFormed.status)")
            // The one pin the service was asked for (beside the gateway's own reading of its change feed).
            let pins = locations.traffic.asked.dropFirst(askedBefore).filter { !$0.contains("/changes") }
            #expect(pins == ["GET /v1/StudentLocation/CDHfAy8sdp"], "\(pins)")
        }
    }

    @Test func onlyDocumentedListParametersAreForwardedAndOverlongOnesAreRefused() async throws {
        #expect(
            try LocationsProxyController.listQuery("limit=5&after=1-2&wait=30&events=false&order=-updatedAt&%6cimit=9&where")
                == "limit=5&order=-updatedAt&where")
        #expect(try LocationsProxyController.listQuery("after=now&wait=30") == nil)
        try await withGatewayRouter { client, locations in
            let student = try await client.signedUpAndLoggedIn("query@example.com")
            let ids = [try await client.postPin(as: student, mapString: "First"), try await client.postPin(as: student, mapString: "Second")]
            let page = try await client.send(.get, "/v1/StudentLocation?limit=1&after=0-0&wait=30&events=false")
            #expect(locations.traffic.asked.last == "GET /v1/StudentLocation?limit=1", "\(locations.traffic.asked)")
            #expect(page.status == .ok)
            #expect((page.json["results"] as? [[String: Any]])?.map { $0["objectId"] as? String } == [ids[1]], "\(page.body)")

            let overlong: [(String, String)] = [
                ("where=" + String(repeating: "%20", count: 2731), #"{"code":102,"error":"where must be at most 8192 characters."}"#),
                ("limit=1&order=" + String(repeating: "x", count: 257), #"{"code":102,"error":"order must be at most 256 characters."}"#),
                ("uniqueKey=" + String(repeating: "1", count: 513), #"{"code":102,"error":"uniqueKey must be at most 512 characters."}"#),
                ("skip=" + String(repeating: "0", count: 33), #"{"code":102,"error":"skip must be at most 32 characters."}"#),
            ]
            for state in ["service up", "service down"] {
                if state == "service down" { locations.traffic.stop() }
                for (query, refusal) in overlong {
                    let reply = try await client.send(.get, "/v1/StudentLocation?" + query)
                    #expect(reply.status == .badRequest, "\(state) \(query.prefix(20))")
                    #expect(reply.body == refusal, "\(state) \(query.prefix(20))")
                }
            }
        }
    }

    @Test func headerValuesWithCROrLFNeverSplitTheRequestTheServiceGets() async throws {
        try await withGateway { client, fixture in
            let port = try #require(client.port)
            let student = try await client.signedUpAndLoggedIn("crlf@example.com")
            let victim = Actor(key: "victim-key", firstName: "Vic", lastName: "Tim").headerValue
            for header in [
                "Idempotency-Key: abc\r\n X-Actor: \(victim)", "Idempotency-Key: abc\rX-Actor: \(victim)",
                "Idempotency-Key: abc\nX-Actor: \(victim)", "If-Match: *\r\n\tX-Actor: \(victim)",
            ] {
                for framing in [Framing.keepAlive, .http10] {
                    let answer = try await rawExchange(
                        framing, "POST", "/v1/StudentLocation", body: TestPin.json,
                        headers: ["Authorization: Bearer \(student.token)", header], port: port)
                    #expect(answer.status.hasSuffix("400 Bad Request"), "\(framing) \(header.debugDescription): \(answer.status)")
                }
            }
            #expect((try await client.send(.get, "/v1/StudentLocation").json["results"] as? [Any])?.isEmpty == true)

            // Past the HTTP parser (another protocol, a future parser), such a value cannot reach the hop whole:
            // a field's value has no CR or LF (`HTTPField` makes them spaces), so it stays one header.
            let endpoint = try #require(InternalHTTPClient.Endpoint(url: "http://127.0.0.1:\(fixture.locations.port)"))
            let http = InternalHTTPClient(endpoint: endpoint)
            let locations = LocationsClient(internalToken: TestDatabase.internalToken, http: http, timeout: .seconds(5), logger: TestDatabase.logger)
            let headers: HTTPFields = [
                .contentType: "application/json", HTTPField.Name(InternalHeaders.idempotencyKey)!: "abc\r\nX-Actor: \(victim)",
            ]
            let answer = try await locations.send(
                method: .POST, path: try LocationsClient.locationPath(nil), query: nil, headers: headers,
                body: ByteBuffer(string: TestPin.json), actor: student.actor, requestID: "crlf")
            #expect(answer.status == 200, "\(String(buffer: answer.body))")
            // Read past the gateway's cached list, which learns of a write made behind its back a moment later.
            let pins = try #require(try await client.send(.get, "/v1/StudentLocation?limit=1000").json["results"] as? [[String: Any]])
            #expect(pins.map { $0["uniqueKey"] as? String } == [student.key])
        }
    }

    @Test func scriptInNamesAndPlacesComesBackByteExactAsJSONStrings() async throws {
        try await withGatewayRouter { client, _ in
            // The harness writes names into its JSON as they are: the quote comes escaped.
            let student = try await client.signedUpAndLoggedIn(
                "xss@example.com", firstName: "<img src=x onerror=alert(1)>",
                lastName: #"</script>\"'"#)
            let id = try await client.postPin(as: student, mapString: #"<svg onload=alert(1)>\\\" & é"#)
            for uri in ["/v1/StudentLocation", "/v1/StudentLocation?limit=5", "/v1/StudentLocation/\(id)", "/parse/classes/StudentLocation/\(id)"] {
                let reply = try await client.send(.get, uri)
                #expect(reply.status == .ok, "\(uri)")
                #expect(reply.headers[.contentType] == "application/json", "\(uri)")
                for field in [
                    #""firstName":"<img src=x onerror=alert(1)>""#, #""lastName":"</script>\"'""#,
                    #""mapString":"<svg onload=alert(1)>\\\" & é""#,
                ] {
                    #expect(reply.body.contains(field), "\(uri): \(field) in \(reply.body)")
                }
            }
            let pin = try await client.send(.get, "/v1/StudentLocation/\(id)").json
            #expect(pin["firstName"] as? String == "<img src=x onerror=alert(1)>")
            #expect(pin["lastName"] as? String == #"</script>"'"#)
            #expect(pin["mapString"] as? String == #"<svg onload=alert(1)>\" & é"#)
        }
    }
}
