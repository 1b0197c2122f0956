import Foundation
import HTTPTypes
import HummingbirdTesting
import OnTheMapShared
import TestSupport
import Testing

@testable import LocationsService
@testable import ServiceTwins

/// Every bad input gets a clear Parse-style error with the right status, and nothing is written.
@Suite struct ValidationTests {
    static let valid: [String: String] = [
        "mapString": #""Mountain View, CA""#, "mediaURL": #""https://udacity.com""#,
        "latitude": "37.386052", "longitude": "-122.083851",
    ]

    static func body(replacing field: String, with value: String?) -> String {
        var fields = valid
        fields[field] = value
        return "{" + fields.sorted { $0.key < $1.key }.map { "\"\($0.key)\":\($0.value)" }.joined(separator: ",") + "}"
    }

    static let rejected: [(name: String, body: String, status: Int, code: Int)] = [
        ("malformed JSON", #"{"mapString": "x", "#, 400, 107),
        ("not an object", #"["mapString"]"#, 400, 107),
        ("latitude as text", body(replacing: "latitude", with: #""37.3""#), 400, 111),
        ("longitude as boolean", body(replacing: "longitude", with: "true"), 400, 111),
        ("mapString as number", body(replacing: "mapString", with: "12"), 400, 111),
        ("latitude above 90", body(replacing: "latitude", with: "90.5"), 400, 142),
        ("latitude below -90", body(replacing: "latitude", with: "-91"), 400, 142),
        ("longitude above 180", body(replacing: "longitude", with: "180.01"), 400, 142),
        ("longitude below -180", body(replacing: "longitude", with: "-200"), 400, 142),
        ("missing latitude", body(replacing: "latitude", with: nil), 400, 142),
        ("missing mediaURL", body(replacing: "mediaURL", with: nil), 400, 142),
        ("empty mapString", body(replacing: "mapString", with: #""   ""#), 400, 142),
        ("mapString over 200", body(replacing: "mapString", with: "\"" + String(repeating: "a", count: 201) + "\""), 400, 142),
        ("javascript link", body(replacing: "mediaURL", with: #""javascript:alert(1)""#), 400, 142),
        ("javascript link in capitals", body(replacing: "mediaURL", with: #""JavaScript:alert(1)""#), 400, 142),
        ("data link", body(replacing: "mediaURL", with: #""data:text/html,<script>alert(1)</script>""#), 400, 142),
        ("ftp link", body(replacing: "mediaURL", with: #""ftp://example.com/file""#), 400, 142),
        ("link without a host", body(replacing: "mediaURL", with: #""https://""#), 400, 142),
        ("link with spaces", body(replacing: "mediaURL", with: #""not a link""#), 400, 142),
        ("empty link", body(replacing: "mediaURL", with: #""""#), 400, 142),
        ("link over 2048", body(replacing: "mediaURL", with: "\"https://example.com/" + String(repeating: "a", count: 2048) + "\""), 400, 142),
        ("body over 16 KiB", body(replacing: "mapString", with: "\"" + String(repeating: "a", count: 17 * 1024) + "\""), 413, 142),
    ]

    @Test(arguments: rejected.indices)
    func rejectedPostIsAnsweredWithItsParseError(_ index: Int) async throws {
        let (name, body, status, code) = Self.rejected[index]
        try await withRouter { client, _ in
            let reply = try await client.send(.post, "/v1/StudentLocation", as: TestActors.jarrod, body: body)
            #expect(reply.status.code == status, "\(name): \(reply.body)")
            #expect(reply.json["code"] as? Int == code, "\(name): \(reply.body)")
            #expect((reply.json["error"] as? String)?.isEmpty == false, "\(name)")
        }
    }

    @Test func rejectedPostsWriteNothing() async throws {
        try await withRouter { client, log in
            for (name, body, status, _) in Self.rejected {
                let reply = try await client.send(.post, "/v1/StudentLocation", as: TestActors.jarrod, body: body)
                #expect(reply.status.code == status, "\(name)")
            }
            let pins = try await client.list()
            #expect(pins.isEmpty)
            #expect(log.eventCount == 0)
        }
    }

    @Test func nanIsRefusedEvenWhenItSlipsThroughAsANumber() throws {
        #expect(throws: LocationError.invalid("latitude must be a number from -90 to 90.")) { try Validation.latitude(.nan) }
        #expect(throws: LocationError.self) { try Validation.longitude(.infinity) }
    }

    @Test func bareDomainGetsHTTPSAndHostPortIsNotAScheme() throws {
        #expect(try Validation.mediaURL("udacity.com") == "https://udacity.com")
        #expect(try Validation.mediaURL(" www.linkedin.com/in/someone ") == "https://www.linkedin.com/in/someone")
        #expect(try Validation.mediaURL("example.com:8080/x") == "https://example.com:8080/x")
        #expect(try Validation.mediaURL("http://example.com") == "http://example.com")
        #expect(throws: LocationError.self) { try Validation.mediaURL("mailto:someone@example.com") }
        #expect(throws: LocationError.self) { try Validation.mediaURL("vbscript:msgbox") }
    }

    @Test func rejectedUpdateLeavesThePinAsItWas() async throws {
        try await withRouter { client, log in
            let id = try await client.post(as: TestActors.jarrod)
            let before = try await client.send(.get, "/v1/StudentLocation/\(id)").body
            for body in [#"{"latitude":100}"#, #"{"mediaURL":"javascript:alert(1)"}"#, #"{"mapString":""}"#, "{oops"] {
                let reply = try await client.send(.put, "/v1/StudentLocation/\(id)", as: TestActors.jarrod, body: body)
                #expect(reply.status == .badRequest, "\(body)")
            }
            #expect(try await client.send(.get, "/v1/StudentLocation/\(id)").body == before)
            #expect(log.eventCount == 1)
        }
    }
}

func eventCount(_ database: TestDatabase) async throws -> Int {
    try await database.withClient { client in
        let rows = try await client.query("SELECT count(*) FROM locations.events", logger: TestDatabase.logger)
        return try await rows.collect().first?.decode(Int.self) ?? -1
    }
}
