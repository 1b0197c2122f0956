import HTTPTypes
import NIOHTTP1
import PreparedHTTP
import Testing

/// A request read by HTTP/1's parser is looked up in the parser's own list: each header reads as it reads
/// from the same request's fields (the router's type, an HTTP/2 stream's), whatever case its name was sent in.
@Suite struct PreparedRequestTests {
    static let lines: [(String, String)] = [
        ("Host", "example.com"),
        ("cookie", "a=1"),
        ("X-Forwarded-For", "203.0.113.7"),
        ("COOKIE", "session=abc"),
        ("accept-encoding", "gzip"),
        ("Accept-Encoding", "br"),
        ("Authorization", "Bearer token"),
        ("X-FORWARDED-FOR", "198.51.100.2"),
        ("Bad Name", "dropped"),
    ]

    static func fromParser(_ target: String = "/v1/StudentLocation?limit=100") -> PreparedRequest {
        PreparedRequest(HTTPRequestHead(version: .http1_1, method: .GET, uri: target, headers: HTTPHeaders(lines)))
    }

    @Test func aHeaderReadsTheSameFromTheParsersListAsFromFieldsWhateverItsCase() throws {
        let parsed = Self.fromParser()
        let fielded = PreparedRequest(target: "/v1/StudentLocation?limit=100", headers: parsed.headers)
        let names: [HTTPField.Name] = [
            .host, .cookie, .acceptEncoding, .authorization, try #require(HTTPField.Name("x-forwarded-for")), .ifNoneMatch,
        ]
        for name in names {
            #expect(parsed.header(name) == fielded.header(name), "\(name)")
        }
        // Repeated lines are joined, in the order sent: cookies with "; ", the rest with ", ".
        #expect(parsed.header(.cookie) == "a=1; session=abc")
        #expect(parsed.header(.acceptEncoding) == "gzip, br")
        #expect(parsed.header(try #require(HTTPField.Name("X-Forwarded-For"))) == "203.0.113.7, 198.51.100.2")
        #expect(parsed.header(.authorization) == "Bearer token")
        #expect(parsed.header(.ifNoneMatch) == nil)
        // A name that is not a token is no field: passed on, it is dropped.
        #expect(parsed.headers.count == Self.lines.count - 1)
        #expect(!parsed.headers.contains { $0.value == "dropped" })
    }

    /// The headers the doors read are found from where one walk put them, the rest along the list: each
    /// reads its own line's value, whatever its case and wherever it is, the 300th line among them.
    @Test func everyHeaderReadsItsOwnLineAmongManyWhereverItIs() throws {
        let read: [(sent: String, value: String)] = [
            ("HOST", "example.com"), ("Cookie", "session=abc"), ("origin", "https://example.com"), ("X-Actor", "actor"),
            ("If-Match", "\"v1\""), ("user-agent", "OnTheMap/1"), ("Content-Type", "application/json"), ("x-request-id", "r-1"),
            ("AUTHORIZATION", "Bearer token"), ("If-None-Match", "\"v2\""), ("Last-Event-ID", "7"), ("Sec-Fetch-Site", "same-origin"),
            ("Accept-Encoding", "br"), ("Idempotency-Key", "k-1"), ("X-Forwarded-For", "203.0.113.7"), ("X-Custom", "custom"),
            ("ETag", "\"v3\""), ("cache-control", "no-cache"), ("Retry-After", "5"), ("IDEMPOTENT-REPLAYED", "true"),
            ("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"), ("Tracestate", "team=maps"),
        ]
        var lines = (0..<300).map { ("X-Filler-\($0)", "\($0)") }
        for (offset, header) in read.enumerated() { lines.insert((header.sent, header.value), at: offset * 15) }
        lines.append(("X-Last", "last"))
        let request = PreparedRequest(HTTPRequestHead(version: .http1_1, method: .POST, uri: "/", headers: HTTPHeaders(lines)))
        for header in read + [("x-last", "last"), ("x-filler-299", "299")] {
            #expect(request.header(try #require(HTTPField.Name(header.0))) == header.1, "\(header.0)")
        }
        let none = PreparedRequest(HTTPRequestHead(version: .http1_1, method: .GET, uri: "/", headers: HTTPHeaders([("Host", "a")])))
        for header in read.dropFirst() {
            #expect(none.header(try #require(HTTPField.Name(header.sent))) == nil, "\(header.sent)")
        }
        #expect(none.header(.host) == "a")
    }

    @Test func theTargetIsSplitAtItsFirstQuestionMark() {
        let request = Self.fromParser("/v1/StudentLocation?where=%7B%7D&order=-updatedAt?x")
        #expect(request.path == "/v1/StudentLocation")
        #expect(request.query == "where=%7B%7D&order=-updatedAt?x")
        let bare = Self.fromParser("/v1/StudentLocation")
        #expect(bare.path == "/v1/StudentLocation")
        #expect(bare.query == nil)
        #expect(Self.fromParser("/healthz?").query == "")
    }
}
