import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import OnTheMapShared
import TestSupport
import Testing

@testable import LocationsService
@testable import ServiceTwins

/// Hostile input at the service's edge: every query value, path segment and body field is bounded and
/// refused in Parse's shape (400, or the contract's 404 for an id that names no pin), never a 500, and
/// nothing is written.
@Suite struct InputAttackTests {

    /// A refusal as a client sees it: the status, and a body of exactly Parse's two keys.
    static func expectParseRefusal(_ reply: Reply, _ status: HTTPResponse.Status, code: Int, _ what: String) {
        expectParseRefusal(reply.status, reply.headers, reply.body, status, code: code, what)
    }

    static func expectParseRefusal(
        _ status: HTTPResponse.Status, _ headers: HTTPFields, _ body: String,
        _ expected: HTTPResponse.Status, code: Int, _ what: String
    ) {
        let json = (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any] ?? [:]
        #expect(status == expected, "\(what): \(status) \(body)")
        #expect(headers[.contentType] == "application/json", "\(what)")
        #expect(json["code"] as? Int == code, "\(what): \(body)")
        #expect((json["error"] as? String)?.isEmpty == false, "\(what): \(body)")
        #expect(json.count == 2, "\(what): \(body)")
    }

    static let oversizedQueries: [(query: String, refusal: String)] = [
        ("where=" + String(repeating: "a", count: 8193), #"{"code":102,"error":"where must be at most 8192 characters."}"#),
        ("order=" + String(repeating: "-updatedAt,", count: 24), #"{"code":102,"error":"order must be at most 256 characters."}"#),
        ("uniqueKey=" + String(repeating: "1", count: 513), #"{"code":102,"error":"uniqueKey must be at most 512 characters."}"#),
        ("limit=" + String(repeating: "0", count: 40) + "1", #"{"code":102,"error":"limit must be at most 32 characters."}"#),
        ("skip=" + String(repeating: "0", count: 40), #"{"code":102,"error":"skip must be at most 32 characters."}"#),
    ]

    @Test func oversizedListQueryValuesAre400WithParseCode102() async throws {
        try await withRouter { client, _ in
            _ = try await client.post(as: TestActors.jarrod)
            for (query, refusal) in Self.oversizedQueries {
                let reply = try await client.send(.get, "/v1/StudentLocation?" + query)
                #expect(reply.status == .badRequest, "\(query.prefix(20))")
                #expect(reply.body == refusal, "\(query.prefix(20))")
            }
            #expect(try await client.list().count == 1)
        }
    }

    @Test func malformedListQueryValuesAre400NeverA500() async throws {
        let deep = String(repeating: "[", count: 2000) + String(repeating: "]", count: 2000)
        try await withLiveService { client, _ in
            _ = try await client.post(as: TestActors.jarrod)
            for query in [
                "limit=99999999999999999999", "skip=99999999999999999999", "limit=1e400", "skip=-0x10",
                "where=" + deep, "where=%7B%22uniqueKey%22%3A" + deep + "%7D", "where=%7B%22uniqueKey%22%3A%7B%22%24ne%22%3A%22%22%7D%7D",
                "where=%FF%FE", "uniqueKey=%00",
            ] {
                let reply = try await client.send(.get, "/v1/StudentLocation?" + query)
                Self.expectParseRefusal(reply, .badRequest, code: 102, String(query.prefix(40)))
            }
            #expect(try await client.list().count == 1)
        }
    }

    @Test func theLargestLimitAndSkipAreServedNotAnError() async throws {
        try await withLiveService { client, _ in
            let id = try await client.post(as: TestActors.jarrod)
            let all = try await client.send(.get, "/v1/StudentLocation?limit=9223372036854775807")
            #expect(all.status == .ok)
            #expect((all.json["results"] as? [[String: Any]])?.map { $0["objectId"] as? String } == [id])
            let none = try await client.send(.get, "/v1/StudentLocation?skip=9223372036854775807")
            #expect(none.status == .ok)
            #expect(none.body == #"{"results":[]}"#)
        }
    }

    /// A whole pin's body, each field's JSON written as given.
    static func pinBytes(mapString: [UInt8] = Array(#""Berlin""#.utf8), latitude: String = "1", longitude: String = "1") -> [UInt8] {
        Array(#"{"mapString":"#.utf8) + mapString + Array(#","mediaURL":"https://a.example","latitude":\#(latitude),"longitude":\#(longitude)}"#.utf8)
    }

    /// Bodies no client writes, each with the Parse code it earns.
    static let hostileBodies: [(name: String, bytes: [UInt8], code: Int)] = [
        ("nesting 5000 deep", pinBytes(mapString: Array((String(repeating: "[", count: 5000) + String(repeating: "]", count: 5000)).utf8)), 107),
        ("invalid UTF-8 in a string", pinBytes(mapString: [UInt8(ascii: "\""), 0xFF, 0xFE, 0xC0, 0x80, UInt8(ascii: "\"")]), 107),
        ("invalid UTF-8 outside strings", [0xEF, 0xBB, 0xBF, 0xFF] + Array(TestPin.json.utf8), 107),
        ("a lone surrogate", pinBytes(mapString: Array(#""\ud800""#.utf8)), 107),
        // A number no double holds is not JSON that Foundation reads.
        ("latitude 1e400", pinBytes(latitude: "1e400"), 107),
        ("longitude -1e400", pinBytes(longitude: "-1e400"), 107),
        ("latitude of 30 digits", pinBytes(latitude: "123456789012345678901234567890"), 142),
        ("NUL in mapString", pinBytes(mapString: Array(#""Ber\u0000lin""#.utf8)), 142),
    ]

    @Test(arguments: hostileBodies.indices)
    func hostileBodiesAre400AndWriteNothing(_ index: Int) async throws {
        let (name, bytes, code) = Self.hostileBodies[index]
        try await withRouter { client, log in
            let id = try await client.post(as: TestActors.jarrod)
            let before = try await client.send(.get, "/v1/StudentLocation/\(id)").body
            for (method, path) in [(HTTPRequest.Method.post, "/v1/StudentLocation"), (.put, "/v1/StudentLocation/\(id)")] {
                let (status, headers, body) = try await client.execute(
                    uri: path, method: method, headers: TestActors.headers(as: TestActors.jarrod),
                    body: ByteBuffer(bytes: bytes)
                ) { response in
                    (response.status, response.headers, String(buffer: response.body))
                }
                Self.expectParseRefusal(status, headers, body, .badRequest, code: code, "\(method) \(name)")
            }
            #expect(try await client.send(.get, "/v1/StudentLocation/\(id)").body == before, "\(name)")
            #expect(log.eventCount == 1, "\(name)")
        }
    }

    @Test func idsThatCannotNameAPinAre404AndWriteNothing() async throws {
        try await withRouter { client, log in
            let id = try await client.post(as: TestActors.jarrod)
            for bad in [
                String(repeating: "a", count: 300), String(id.dropLast()), id + "1", String(id.dropLast()) + "-",
                "%41" + String(id.dropFirst()), "..%2f" + id, "%2e%2e",
            ] {
                for method in [HTTPRequest.Method.get, .put, .delete] {
                    let reply = try await client.send(
                        method, "/v1/StudentLocation/\(bad)", as: TestActors.jarrod,
                        body: method == .put ? TestPin.json : nil)
                    #expect(reply.status == .notFound, "\(method) \(bad.prefix(20))")
                    #expect(reply.body == #"{"code":101,"error":"Object not found."}"#, "\(method) \(bad.prefix(20))")
                }
            }
            #expect(log.eventCount == 1)
            #expect(try await client.list().count == 1)
        }
    }

    /// Links that read as one place and lead to another, or run script.
    static let disguisedLinks = [
        "https://example.com@evil.example/", "https://user:pass@x.com", "example.com@evil.example", "HTTPS://a:@evil.example",
        "javascript:alert(1)", "data:text/html,<script>alert(1)</script>", "https://x.com/\u{0}", "http://x.com\\@evil.com",
        "https://x.com\\evil.example", "https://x.com/a\u{85}b", "https://x.com/\u{7F}", "https://x.com/a\u{2028}b", "https://x.com/\ta",
        // Hosts no name can be: RFC 3986 lets a host hold sub-delimiters, DNS does not.
        "http://uy6.zc.nuc.0f6*", "https://exa!mple.com", "https://example..com/", "https://example.com'/",
    ]

    @Test(arguments: disguisedLinks)
    func disguisedLinksAreRefusedOnPostAndUpdate(_ link: String) async throws {
        var writer = JSONWriter()
        writer.beginObject()
        writer.field("mapString", "Berlin")
        writer.field("mediaURL", link)
        writer.field("latitude", 52.5)
        writer.field("longitude", 13.4)
        writer.endObject()
        let json = writer.string
        try await withRouter { client, log in
            let id = try await client.post(as: TestActors.jarrod)
            let before = try await client.send(.get, "/v1/StudentLocation/\(id)").body
            let posted = try await client.send(.post, "/v1/StudentLocation", as: TestActors.jarrod, body: json)
            Self.expectParseRefusal(posted, .badRequest, code: 142, "POST \(link)")
            let updated = try await client.send(.put, "/v1/StudentLocation/\(id)", as: TestActors.jarrod, body: json)
            Self.expectParseRefusal(updated, .badRequest, code: 142, "PUT \(link)")
            #expect(try await client.send(.get, "/v1/StudentLocation/\(id)").body == before)
            #expect(log.eventCount == 1)
        }
    }

    @Test func plainLinksStillPassAndABareDomainStillGetsHTTPS() throws {
        #expect(try Validation.mediaURL("udacity.com/course") == "https://udacity.com/course")
        #expect(try Validation.mediaURL("https://medium.com/@someone") == "https://medium.com/@someone")
        #expect(try Validation.mediaURL("https://x.com/search?q=a@b#c@d") == "https://x.com/search?q=a@b#c@d")
        #expect(try Validation.mediaURL("http://localhost:8080/x") == "http://localhost:8080/x")
        #expect(try Validation.mediaURL("https://bücher.example/ß") == "https://bücher.example/ß")
        #expect(try Validation.mediaURL("https://my-site.co.uk") == "https://my-site.co.uk")
    }

    @Test func metricsNeedTheInternalTokenWhileHealthAndReadinessStayOpen() async throws {
        try await withLiveService { client, _ in
            let refusal = #"{"code":209,"error":"This service only answers requests that carry the internal token."}"#
            let none = try await client.send(.get, "/metrics", token: false)
            #expect(none.status == .unauthorized)
            #expect(none.body == refusal)
            let wrong = try await client.send(.get, "/metrics", headers: [HTTPField(name: .authorization, value: "Bearer guess")], token: false)
            #expect(wrong.status == .unauthorized)
            #expect(wrong.body == refusal)
            #expect(!none.body.contains("onthemap_") && !wrong.body.contains("onthemap_"))
            let allowed = try await client.send(.get, "/metrics")
            #expect(allowed.status == .ok)
            #expect(allowed.body.contains("onthemap_http_requests_total"))
            #expect(try await client.send(.get, "/healthz", token: false).status == .ok)
            #expect(try await client.send(.get, "/readyz", token: false).status == .ok)
        }
    }

    @Test func scriptInTextFieldsIsStoredAndReturnedAsJSONStringData() async throws {
        let actor = Actor(key: "6660001111", firstName: "<img src=x onerror=alert(1)>", lastName: #"O'Brien"); DROP TABLE x;--\"#)
        let mapString = #"</script><script>alert("pwned")</script>"#
        var writer = JSONWriter()
        writer.beginObject()
        writer.field("mapString", mapString)
        writer.field("mediaURL", "https://x.com/?q=<script>")
        writer.field("latitude", 1)
        writer.field("longitude", 2)
        writer.endObject()
        let body = writer.string
        try await withRouter { client, _ in
            let posted = try await client.send(.post, "/v1/StudentLocation", as: actor, body: body)
            let id = try #require(posted.json["objectId"] as? String, "\(posted.body)")
            let escaped = [
                #""firstName":"<img src=x onerror=alert(1)>""#, #""lastName":"O'Brien\"); DROP TABLE x;--\\""#,
                #""mapString":"</script><script>alert(\"pwned\")</script>""#, #""mediaURL":"https://x.com/?q=<script>""#,
            ]
            for uri in [
                "/v1/StudentLocation/\(id)", "/v1/StudentLocation", "/v1/StudentLocation?limit=5", "/v1/StudentLocation/changes?after=0-0&wait=20",
            ] {
                let reply = try await client.send(.get, uri)
                #expect(reply.status == .ok, "\(uri)")
                #expect(reply.headers[.contentType] == "application/json", "\(uri)")
                for field in escaped { #expect(reply.body.contains(field), "\(uri): \(field) in \(reply.body)") }
            }
            let pin = try await client.send(.get, "/v1/StudentLocation/\(id)").json
            #expect(pin["firstName"] as? String == actor.firstName)
            #expect(pin["lastName"] as? String == actor.lastName)
            #expect(pin["mapString"] as? String == mapString)
        }
    }
}
