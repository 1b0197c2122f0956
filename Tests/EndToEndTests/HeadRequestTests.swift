import Foundation
import TestSupport
import Testing

/// A HEAD is answered as the GET of the same target, without the body (RFC 9110 §9.3.2), as `curl -I` and
/// uptime monitors ask: the same status and headers, on a connection that goes on to its next request.
@Suite struct HeadRequestTests {
    /// The head of an answer, split: its status line and its headers by lowercased name (but `Date`).
    static func fields(_ head: String) -> (status: String, headers: [String: String]) {
        let lines = head.components(separatedBy: "\r\n").filter { !$0.isEmpty }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            let (name, value) = (line.prefix { $0 != ":" }.lowercased(), line.drop { $0 != ":" }.dropFirst().trimmingCharacters(in: .whitespaces))
            if name != "date" { headers[name] = value }
        }
        return (lines.first ?? "", headers)
    }

    static let perDoor: Set<String> = ["x-request-id", "vary"]

    @Test func aHeadGetsItsGetsHeadAndNoBodyAtEitherService() async throws {
        try await withSystem { gateway, locations in
            let token = "Authorization: Bearer \(TestDatabase.internalToken)\r\n"
            for (service, path, extra) in [
                (gateway, "/v1/StudentLocation", ""), (gateway, "/v1/StudentLocation?limit=5&order=-updatedAt", ""), (gateway, "/healthz", ""),
                (gateway, "/openapi.yaml", ""), (gateway, "/", ""), (gateway, "/v1/StudentLocation/abcdefghij", ""),
                (locations, "/v1/StudentLocation", token), (locations, "/healthz", ""),
            ] {
                let connection = try RawConnection(port: service.port)
                defer { connection.close() }
                try connection.send("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n\(extra)\r\n")
                let whole = try await connection.receiveResponse()
                let get = Self.fields(String(whole[..<(whole.range(of: "\r\n\r\n")?.upperBound ?? whole.endIndex)]))
                try connection.send("HEAD \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n\(extra)\r\n")
                let head = Self.fields(try await connection.receiveHead())
                #expect(head.status == get.status, "\(path)")
                // All but the request's own id, and `Vary`: the router (which answers a HEAD) names
                // `Accept-Encoding` on every read it answers, the door before it (the GET of a small list)
                // only on an answer that has coded forms.
                let expected = get.headers.filter { !Self.perDoor.contains($0.key) }
                #expect(head.headers.filter { !Self.perDoor.contains($0.key) } == expected, "\(path)")
                // Nothing of the GET's body followed the head: the next answer on the connection is whole.
                try connection.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                #expect(try await connection.receiveResponse().hasPrefix("HTTP/1.1 200 OK\r\n"), "after HEAD \(path)")
            }
        }
    }

    @Test func aHeadWithTheCurrentTagIs304AndAHeadForTheLiveStreamOpensNone() async throws {
        try await withSystem { gateway, _ in
            let connection = try RawConnection(port: gateway.port)
            defer { connection.close() }
            try connection.send("HEAD /v1/StudentLocation HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            let tag = try #require(Self.fields(try await connection.receiveHead()).headers["etag"])
            try connection.send("HEAD /v1/StudentLocation HTTP/1.1\r\nHost: 127.0.0.1\r\nIf-None-Match: \(tag)\r\n\r\n")
            #expect(Self.fields(try await connection.receiveHead()).status == "HTTP/1.1 304 Not Modified")

            try connection.send("HEAD /v1/StudentLocation/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            let stream = Self.fields(try await connection.receiveHead())
            #expect(stream.status == "HTTP/1.1 200 OK")
            #expect(stream.headers["content-type"]?.hasPrefix("text/event-stream") == true, "\(stream.headers)")
            // No stream holds the connection: its next request is answered, and nothing came before that answer.
            try connection.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            #expect(try await connection.receiveResponse().hasPrefix("HTTP/1.1 200 OK\r\n"))
        }
    }
}
