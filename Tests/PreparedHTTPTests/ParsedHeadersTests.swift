import HTTPTypes
import NIOHTTP1
import PreparedHTTP
import Testing

/// Headers read by name from the parser's list read as the same headers made into fields do: an answer
/// the gateway relays keeps each of its lines as the service sent it, in the order asked for.
@Suite struct ParsedHeadersTests {
    static let lines: [(String, String)] = [
        ("Content-Type", "application/json"), ("Set-Cookie", "a=1"), ("ETag", "\"v1\""), ("cache-control", "private"),
        ("Cache-Control", "max-age=0"), ("X-Other", "kept out"), ("Idempotent-Replayed", "true"),
    ]

    @Test func theLinesNamedAreEachLineAsSentInTheOrderAskedForFromTheListAsFromFields() throws {
        let names: [HTTPField.Name] = [.eTag, .cacheControl, .retryAfter, .contentType, try #require(HTTPField.Name("Idempotent-Replayed"))]
        let list = ParsedHeaders(HTTPHeaders(Self.lines))
        let fields = ParsedHeaders(HTTPFields(Self.lines.map { HTTPField(name: HTTPField.Name($0.0)!, value: $0.1) }))
        let expected = ["\"v1\"", "private", "max-age=0", "application/json", "true"]
        #expect(list.fields(named: names).map(\.value) == expected)
        #expect(fields.fields(named: names).map(\.value) == expected)
        #expect(list.fields(named: names).map(\.name) == [.eTag, .cacheControl, .cacheControl, .contentType, names[4]])
        // Looked up by name, a name's lines are joined, as fields join them.
        #expect(list[.cacheControl] == "private, max-age=0")
        #expect(list[.cacheControl] == fields[.cacheControl])
        #expect(list[.retryAfter] == nil)
        #expect(list.fields == fields.fields)
    }
}
