import HTTPTypes
import Logging
import NIOCore
import NIOEmbedded
import NIOHTTPTypes
import Prometheus
import Testing
@testable import ServiceKit

/// Requests whose answer is in memory are answered on the event loop; everything else reaches the
/// router untouched, and answers never overtake each other on a connection.
@Suite struct PreparedResponseHandlerTests {
    static let list = CachedJSON(body: ByteBuffer(string: #"{"results":[]}"#), etag: "\"abc\"")

    /// A connection whose handler answers GET /list from `list` and leaves everything else to the router.
    func connection(registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry()) throws -> EmbeddedChannel {
        let handler = PreparedResponseHandler(
            serverName: "test-server", counters: RequestCounters(registry: registry), logger: Logger(label: "test"),
            prepared: { request in
                request.path == "/list" ? Self.list.answer(ifNoneMatch: request.headerFields[.ifNoneMatch]) : nil
            })
        return EmbeddedChannel(handler: handler)
    }

    func request(_ channel: EmbeddedChannel, _ method: HTTPRequest.Method, _ path: String, _ fields: HTTPFields = [:]) throws {
        try channel.writeInbound(HTTPRequestPart.head(HTTPRequest(method: method, scheme: nil, authority: "localhost", path: path, headerFields: fields)))
        try channel.writeInbound(HTTPRequestPart.end(nil))
    }

    func written(_ channel: EmbeddedChannel) throws -> [HTTPResponsePart] {
        var parts: [HTTPResponsePart] = []
        while let part = try channel.readOutbound(as: HTTPResponsePart.self) { parts.append(part) }
        return parts
    }

    func routed(_ channel: EmbeddedChannel) throws -> [HTTPRequestPart] {
        var parts: [HTTPRequestPart] = []
        while let part = try channel.readInbound(as: HTTPRequestPart.self) { parts.append(part) }
        return parts
    }

    @Test func aCachedDocumentIsAnsweredWithItsBytesAndTheUsualHeaders() throws {
        let channel = try connection()
        try request(channel, .get, "/list")
        #expect(try routed(channel).isEmpty)
        let parts = try written(channel)
        guard parts.count == 3, case .head(let head) = parts[0], case .body(let body) = parts[1], case .end = parts[2] else {
            Issue.record("expected head, body, end; got \(parts)")
            return
        }
        #expect(head.status == .ok)
        #expect(head.headerFields[.contentType] == "application/json")
        #expect(head.headerFields[.eTag] == "\"abc\"")
        #expect(head.headerFields[.contentLength] == "14")
        #expect(head.headerFields[.server] == "test-server")
        #expect(head.headerFields[.date]?.hasSuffix(" GMT") == true)
        #expect(String(buffer: body) == #"{"results":[]}"#)
    }

    @Test func aCurrentCopyIs304WithoutABody() throws {
        let channel = try connection()
        try request(channel, .get, "/list", [.ifNoneMatch: "\"old\", \"abc\""])
        let parts = try written(channel)
        guard parts.count == 2, case .head(let head) = parts[0], case .end = parts[1] else {
            Issue.record("expected head, end; got \(parts)")
            return
        }
        #expect(head.status == .notModified)
        #expect(head.headerFields[.contentLength] == "0")
    }

    @Test func everythingElseReachesTheRouterUnchanged() throws {
        let channel = try connection()
        try request(channel, .get, "/other")
        try request(channel, .post, "/list")
        try request(channel, .get, "/list", [.connection: "close"])
        #expect(try written(channel).isEmpty)
        let paths = try routed(channel).compactMap { part -> String? in
            if case .head(let request) = part { return "\(request.method) \(request.path ?? "")" } else { return nil }
        }
        #expect(paths == ["GET /other", "POST /list", "GET /list"])
    }

    @Test func aPipelinedRequestWaitsForTheRoutersAnswerBeforeIt() throws {
        let channel = try connection()
        try request(channel, .get, "/slow")
        try request(channel, .get, "/list")
        // The router has not answered /slow yet, so /list must not be answered ahead of it.
        #expect(try written(channel).isEmpty)
        #expect(try routed(channel).count == 4)

        // Once the router has answered both, the connection is free again.
        for _ in 0..<2 {
            try channel.writeOutbound(HTTPResponsePart.head(HTTPResponse(status: .ok)))
            try channel.writeOutbound(HTTPResponsePart.end(nil))
        }
        _ = try written(channel)
        try request(channel, .get, "/list")
        #expect(try routed(channel).isEmpty)
        #expect(try written(channel).count == 3)
    }

    @Test func answersFromMemoryAreCounted() throws {
        let registry = PrometheusCollectorRegistry()
        let channel = try connection(registry: registry)
        try request(channel, .get, "/list")
        var text: [UInt8] = []
        registry.emit(into: &text)
        #expect(String(decoding: text, as: UTF8.self).contains(#"onthemap_http_requests_total{status="2xx"} 1"#))
    }

    @Test func theDateHeaderIsAnIMFFixdate() {
        #expect(HTTPDate.format(784111777) == "Sun, 06 Nov 1994 08:49:37 GMT")
    }
}
