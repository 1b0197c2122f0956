import HTTPTypes
import Logging
import NIOCore
import NIOEmbedded
import NIOHTTP1
import Prometheus
import Testing
@testable import ServiceKit

/// Requests whose answer is in memory are answered on the event loop; everything else reaches the
/// router untouched, and answers never overtake each other on a connection.
@Suite struct PreparedResponseHandlerTests {
    static let list = CachedJSON(body: ByteBuffer(string: #"{"results":[]}"#), etag: "\"abc\"")

    /// A connection whose handler answers GET /list from `list` and leaves everything else to the router.
    func connection(registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry()) -> EmbeddedChannel {
        EmbeddedChannel(handler: PreparedResponseHandler(
            serverName: "test-server", counters: RequestCounters(registry: registry), logger: Logger(label: "test"),
            prepared: { request in
                request.path == "/list" ? Self.list.answer(ifNoneMatch: request.header(.ifNoneMatch)) : nil
            }))
    }

    func request(_ channel: EmbeddedChannel, _ method: HTTPMethod, _ uri: String, _ headers: HTTPHeaders = [:],
                 version: HTTPVersion = .http1_1) throws {
        try channel.writeInbound(HTTPServerRequestPart.head(HTTPRequestHead(version: version, method: method, uri: uri, headers: headers)))
        try channel.writeInbound(HTTPServerRequestPart.end(nil))
    }

    func written(_ channel: EmbeddedChannel) throws -> [HTTPServerResponsePart] {
        var parts: [HTTPServerResponsePart] = []
        while let part = try channel.readOutbound(as: HTTPServerResponsePart.self) { parts.append(part) }
        return parts
    }

    /// "METHOD URI" of each request that reached the router.
    func routed(_ channel: EmbeddedChannel) throws -> [String] {
        var requests: [String] = []
        while let part = try channel.readInbound(as: HTTPServerRequestPart.self) {
            if case .head(let head) = part { requests.append("\(head.method) \(head.uri)") }
        }
        return requests
    }

    @Test func aCachedDocumentIsAnsweredWithItsBytesAndTheUsualHeaders() throws {
        let channel = connection()
        try request(channel, .GET, "/list?limit=100")
        #expect(try routed(channel).isEmpty)
        let parts = try written(channel)
        guard parts.count == 3, case .head(let head) = parts[0], case .body(.byteBuffer(let body)) = parts[1], case .end = parts[2] else {
            Issue.record("expected head, body, end; got \(parts)")
            return
        }
        #expect(head.status == .ok)
        #expect(head.headers["Content-Type"] == ["application/json"])
        #expect(head.headers["ETag"] == ["\"abc\""])
        #expect(head.headers["Content-Length"] == ["14"])
        #expect(head.headers["Server"] == ["test-server"])
        #expect(head.headers.first(name: "Date")?.hasSuffix(" GMT") == true)
        #expect(String(buffer: body) == #"{"results":[]}"#)
    }

    @Test func aCurrentCopyIs304WithoutABody() throws {
        let channel = connection()
        try request(channel, .GET, "/list", ["If-None-Match": "\"old\", \"abc\""])
        let parts = try written(channel)
        guard parts.count == 2, case .head(let head) = parts[0], case .end = parts[1] else {
            Issue.record("expected head, end; got \(parts)")
            return
        }
        #expect(head.status == .notModified)
        #expect(head.headers["Content-Length"] == ["0"])
    }

    @Test func everythingElseReachesTheRouterUnchanged() throws {
        let channel = connection()
        try request(channel, .GET, "/other")
        try request(channel, .POST, "/list")
        try request(channel, .GET, "/list", ["Connection": "close"])
        try request(channel, .GET, "/list", version: .http1_0)
        #expect(try written(channel).isEmpty)
        #expect(try routed(channel) == ["GET /other", "POST /list", "GET /list", "GET /list"])
    }

    @Test func aPipelinedRequestWaitsForTheRoutersAnswerBeforeIt() throws {
        let channel = connection()
        try request(channel, .GET, "/slow")
        try request(channel, .GET, "/list")
        // The router has not answered /slow yet, so /list must not be answered ahead of it.
        #expect(try written(channel).isEmpty)
        #expect(try routed(channel) == ["GET /slow", "GET /list"])

        // Once the router has answered both, the connection is free again.
        for _ in 0..<2 {
            try channel.writeOutbound(HTTPServerResponsePart.head(HTTPResponseHead(version: .http1_1, status: .ok)))
            try channel.writeOutbound(HTTPServerResponsePart.end(nil))
        }
        _ = try written(channel)
        try request(channel, .GET, "/list")
        #expect(try routed(channel).isEmpty)
        #expect(try written(channel).count == 3)
    }

    @Test func answersFromMemoryAreCounted() throws {
        let registry = PrometheusCollectorRegistry()
        let channel = connection(registry: registry)
        try request(channel, .GET, "/list")
        var text: [UInt8] = []
        registry.emit(into: &text)
        #expect(String(decoding: text, as: UTF8.self).contains(#"onthemap_http_requests_total{status="2xx"} 1"#))
    }

    @Test func theDateHeaderIsAnIMFFixdate() {
        #expect(HTTPDate.format(784111777) == "Sun, 06 Nov 1994 08:49:37 GMT")
    }
}
