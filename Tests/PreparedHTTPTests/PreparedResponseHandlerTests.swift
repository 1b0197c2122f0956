import Foundation
import HTTPTypes
import Logging
import NIOCore
import NIOEmbedded
import NIOHTTP1
import ServerTransport
import Synchronization
import Testing

@testable import PreparedHTTP

/// Requests whose answer is in memory are answered on the event loop, and so are the requests with a
/// body that the handler defers to a future; everything else reaches the router untouched, and answers
/// never overtake each other on a connection.
@Suite struct PreparedResponseHandlerTests {
    static let list = PreparedResponse(
        status: .ok, headers: [.contentType: "application/json", .eTag: "\"abc\""], body: ByteBuffer(string: #"{"results":[]}"#))
    static let notModified = PreparedResponse(status: .notModified, headers: [.eTag: "\"abc\""], body: nil)

    /// What the handler reported of its answers: "ROUTE STATUS".
    final class Reports: Sendable {
        let lines = Mutex<[String]>([])
        var all: [String] { lines.withLock { $0 } }
    }

    /// The answers of POST /echo, given by the test: the bodies received, and the callbacks to answer them.
    final class Echoes: @unchecked Sendable {
        var bodies: [String] = []
        var answers: [PreparedDeferral.Answer] = []

        /// Answers the oldest open POST /echo with 201 and the body it received.
        func answerNext() {
            let body = bodies[bodies.count - answers.count]
            answers.removeFirst()(PreparedResponse(status: .created, headers: [:], body: ByteBuffer(string: "echo:" + body)))
        }
    }

    /// A connection whose handler answers GET /list from `list`, defers POST /echo (bodies up to 8 bytes)
    /// to `echoes`, streams GET /stream (starting with "hello"; refused with 429 when the request has
    /// `X-Refuse`), and leaves everything else to the router, behind NIO's HTTP encoder as on a real connection.
    /// `parsing`: requests arrive as bytes, through NIO's HTTP parser, rather than as its parts.
    func connection(reports: Reports = Reports(), echoes: Echoes = Echoes(), parsing: Bool = false) throws -> EmbeddedChannel {
        let handling: @Sendable (PreparedRequest) -> PreparedHandling? = { request in
            if request.method == .POST, request.path == "/echo" {
                return .deferred(
                    PreparedDeferral(bodyLimit: 8) { body, _, _, _, answer in
                        guard let body else {
                            return answer(PreparedResponse(status: .contentTooLarge, headers: [:], body: ByteBuffer(string: "too large")))
                        }
                        echoes.bodies.append(String(buffer: body))
                        echoes.answers.append(answer)
                    })
            }
            if request.method == .GET, request.path == "/stream" {
                let refuse = request.header(HTTPField.Name("X-Refuse")!) != nil
                return .stream(
                    PreparedStreamOpening(headers: [.contentType: "text/event-stream"]) { stream in
                        if refuse {
                            return .refused(PreparedResponse(status: .tooManyRequests, headers: [:], body: ByteBuffer(string: "no")))
                        }
                        return .admitted { stream.write(PreparedStream.Chunk(ByteBuffer(string: "hello"))) }
                    })
            }
            guard request.method == .GET, request.path == "/list" else { return nil }
            return .answer(request.header(.ifNoneMatch)?.contains("\"abc\"") == true ? Self.notModified : Self.list)
        }
        let handler = PreparedResponseHandler(
            serverName: "test-server", logger: Logger(label: "test"),
            prepared: { request in handling(request).map { ($0, "\(request.method.rawValue) \(request.path)") } },
            answered: { route, status, _ in reports.lines.withLock { $0.append("\(route) \(status.code)") } })
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandlers([HTTPResponseEncoder(), OutboundEvents(), handler])
        if parsing {
            let parser = ByteToMessageHandler(HTTPRequestDecoder(leftOverBytesStrategy: .dropBytes))
            try channel.pipeline.syncOperations.addHandler(
                parser, position: .after(channel.pipeline.syncOperations.handler(type: HTTPResponseEncoder.self)))
        }
        return channel
    }

    /// Keeps the user events sent towards the socket, as the handlers in front of the handler see them.
    final class OutboundEvents: ChannelOutboundHandler, @unchecked Sendable {
        typealias OutboundIn = Any
        var events: [Any] = []

        func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
            events.append(event)
            promise?.succeed()
        }
    }

    /// Who holds the connection, if that is settled yet.
    func holder(_ channel: EmbeddedChannel) throws -> ConnectionHolder? {
        let future = try #require(try channel.pipeline.syncOperations.handler(type: PreparedResponseHandler.self).holder)
        channel.embeddedEventLoop.run()
        let settled = Mutex<ConnectionHolder?>(nil)
        future.whenSuccess { holder in settled.withLock { $0 = holder } }
        return settled.withLock { $0 }
    }

    func outboundEvents(_ channel: EmbeddedChannel) throws -> [Any] {
        try channel.pipeline.syncOperations.handler(type: OutboundEvents.self).events
    }

    func request(
        _ channel: EmbeddedChannel, _ method: HTTPMethod, _ uri: String, _ headers: HTTPHeaders = [:],
        version: HTTPVersion = .http1_1, body: [String] = []
    ) throws {
        try channel.writeInbound(HTTPServerRequestPart.head(HTTPRequestHead(version: version, method: method, uri: uri, headers: headers)))
        for chunk in body { try channel.writeInbound(HTTPServerRequestPart.body(ByteBuffer(string: chunk))) }
        try channel.writeInbound(HTTPServerRequestPart.end(nil))
    }

    /// The bytes sent to the client so far.
    func written(_ channel: EmbeddedChannel) throws -> String {
        var text = ""
        while let bytes = try channel.readOutbound(as: ByteBuffer.self) { text += String(buffer: bytes) }
        return text
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
        let channel = try connection()
        try request(channel, .GET, "/list?limit=100")
        #expect(try routed(channel).isEmpty)
        let text = try written(channel)
        #expect(text.hasPrefix("HTTP/1.1 200 OK\r\n"))
        for header in ["Content-Type: application/json", "ETag: \"abc\"", "Content-Length: 14", "Server: test-server"] {
            #expect(text.contains("\r\n\(header)\r\n"), "\(header) in \(text)")
        }
        #expect(text.contains("\r\nDate: ") && text.contains(" GMT\r\n"))
        #expect(text.hasSuffix("\r\n\r\n{\"results\":[]}"))
    }

    @Test func aCurrentCopyIs304WithoutABody() throws {
        let channel = try connection()
        try request(channel, .GET, "/list", ["If-None-Match": "\"old\", \"abc\""])
        let text = try written(channel)
        #expect(text.hasPrefix("HTTP/1.1 304 Not Modified\r\n"))
        #expect(text.contains("\r\nContent-Length: 0\r\n"))
        #expect(text.hasSuffix("\r\n\r\n"))
    }

    @Test func everythingElseReachesTheRouterUnchanged() throws {
        let channel = try connection()
        try request(channel, .GET, "/other")
        try request(channel, .POST, "/list")
        try request(channel, .GET, "/list", ["Connection": "close"])
        try request(channel, .GET, "/list", version: .http1_0)
        try request(channel, .POST, "/echo", ["Expect": "100-continue"], body: ["hi"])
        #expect(try written(channel).isEmpty)
        #expect(try routed(channel) == ["GET /other", "POST /list", "GET /list", "GET /list", "POST /echo"])
    }

    @Test func anHTTP10RequestTellsTheRouterToCloseTheConnectionAfterItsAnswer() throws {
        let channel = try connection()
        try request(channel, .GET, "/other", version: .http1_0)
        try request(channel, .GET, "/other", ["Connection": "keep-alive"], version: .http1_0)
        var connectionHeaders: [[String]] = []
        while let part = try channel.readInbound(as: HTTPServerRequestPart.self) {
            if case .head(let head) = part { connectionHeaders.append(head.headers["Connection"]) }
        }
        #expect(connectionHeaders == [["close"], ["keep-alive"]])
    }

    @Test func aDeferredAnswerGetsTheWholeBodyAndIsWrittenWhenReady() throws {
        let echoes = Echoes()
        let channel = try connection(echoes: echoes)
        try request(channel, .POST, "/echo", body: ["pin", "-1"])
        #expect(try routed(channel).isEmpty)
        #expect(echoes.bodies == ["pin-1"])
        #expect(try written(channel).isEmpty)
        echoes.answerNext()
        let text = try written(channel)
        #expect(text.hasPrefix("HTTP/1.1 201 Created\r\n"))
        #expect(text.contains("\r\nContent-Length: 10\r\n"))
        #expect(text.hasSuffix("\r\n\r\necho:pin-1"))
    }

    @Test func aBodyPastTheLimitIsNotPassedOn() throws {
        let echoes = Echoes()
        let channel = try connection(echoes: echoes)
        try request(channel, .POST, "/echo", body: ["12345", "6789"])
        #expect(echoes.bodies.isEmpty)
        let text = try written(channel)
        #expect(text.hasPrefix("HTTP/1.1 413 Payload Too Large\r\n"))
        #expect(text.hasSuffix("\r\n\r\ntoo large"))
    }

    @Test func requestsPipelinedBehindADeferredAnswerWaitForIt() throws {
        let echoes = Echoes()
        let channel = try connection(echoes: echoes)
        try request(channel, .POST, "/echo", body: ["first"])
        try request(channel, .GET, "/list")
        try request(channel, .GET, "/other")
        try request(channel, .POST, "/echo", body: ["second"])
        // Nothing overtakes the first answer, not even one from memory, and the router sees nothing yet.
        #expect(try written(channel).isEmpty)
        #expect(try routed(channel).isEmpty)
        #expect(echoes.bodies == ["first"])

        echoes.answerNext()
        // The list is answered right after; /other goes to the router, and the second echo waits for its answer.
        let text = try written(channel)
        #expect(text.components(separatedBy: "HTTP/1.1 ").count == 3)
        #expect(text.contains("echo:first") && text.hasSuffix(#"{"results":[]}"#))
        #expect(try routed(channel) == ["GET /other", "POST /echo"])
        #expect(echoes.bodies == ["first"])
    }

    /// Passes on the reads it gets only at the end of a read, as NIO's asynchronous channel, the router's
    /// side of a real connection, hands them to the router.
    final class DeliveredAtReadsEnd: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = HTTPServerRequestPart
        var waiting: [NIOAny] = []

        func channelRead(context: ChannelHandlerContext, data: NIOAny) { waiting.append(data) }

        func channelReadComplete(context: ChannelHandlerContext) {
            for data in waiting { context.fireChannelRead(data) }
            waiting.removeAll()
            context.fireChannelReadComplete()
        }
    }

    @Test func aRequestForTheRouterHeldBehindADeferredAnswerReachesItWhenThatAnswerIsWritten() throws {
        let echoes = Echoes()
        let channel = try connection(echoes: echoes)
        try channel.pipeline.syncOperations.addHandler(DeliveredAtReadsEnd())
        try request(channel, .POST, "/echo", body: ["first"])
        try request(channel, .GET, "/other")
        #expect(try routed(channel).isEmpty)

        // The client sends nothing more: it waits for its two answers.
        echoes.answerNext()
        #expect(try written(channel).contains("echo:first"))
        #expect(try routed(channel) == ["GET /other"])
    }

    @Test func aPipelinedRequestWaitsForTheRoutersAnswerBeforeIt() throws {
        let channel = try connection()
        try request(channel, .GET, "/slow")
        try request(channel, .GET, "/list")
        // The router has not answered /slow yet, so /list must not be answered ahead of it.
        #expect(try written(channel).isEmpty)
        #expect(try routed(channel) == ["GET /slow", "GET /list"])

        // Once the router has answered both, the connection is free again.
        for _ in 0..<2 {
            try channel.writeOutbound(
                HTTPServerResponsePart.head(HTTPResponseHead(version: .http1_1, status: .accepted, headers: ["Content-Length": "0"])))
            try channel.writeOutbound(HTTPServerResponsePart.end(nil))
        }
        try request(channel, .GET, "/list")
        #expect(try routed(channel).isEmpty)
        let text = try written(channel)
        #expect(text.components(separatedBy: "HTTP/1.1 202 Accepted").count == 3)
        #expect(text.hasSuffix(#"{"results":[]}"#))
    }

    /// Records the events that get past the handler.
    final class EventRecorder: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = HTTPServerRequestPart
        var quiesceEvents = 0

        func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
            if event is ChannelShouldQuiesceEvent { quiesceEvents += 1 }
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            context.fireChannelRead(data)
        }
    }

    @Test func aShutdownWaitsForTheDeferredAnswerBeforeTheConnectionIsLetGo() throws {
        let echoes = Echoes()
        let channel = try connection(echoes: echoes)
        let recorder = EventRecorder()
        try channel.pipeline.syncOperations.addHandler(recorder)
        try request(channel, .POST, "/echo", body: ["pin"])
        channel.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        // The handlers after it (which close idle connections) hear of the shutdown only once the answer is out.
        #expect(recorder.quiesceEvents == 0)
        echoes.answerNext()
        #expect(try written(channel).hasSuffix("echo:pin"))
        #expect(recorder.quiesceEvents == 1)

        // With nothing owed, the event passes at once.
        channel.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        #expect(recorder.quiesceEvents == 2)
    }

    @Test func everyAnswerOfTheHandlersIsReportedUnderItsRoute() throws {
        let reports = Reports()
        let channel = try connection(reports: reports)
        try request(channel, .GET, "/list?limit=100")
        try request(channel, .POST, "/echo", body: ["123456789"])
        try request(channel, .GET, "/other")
        #expect(reports.all == ["GET /list 200", "POST /echo 413"])
    }

    @Test func theRoutersAnswersCarryTheSameHeadersAsTheHandlers() throws {
        let channel = try connection()
        // The second may turn while the answers are written: the date is one of those around them.
        let before = HTTPDate.now
        try request(channel, .GET, "/other")
        try channel.writeOutbound(
            HTTPServerResponsePart.head(
                HTTPResponseHead(
                    version: .http1_1, status: .ok, headers: ["Date": "Thu, 01 Jan 1970 00:00:00 GMT", "Content-Length": "0"])))
        try channel.writeOutbound(HTTPServerResponsePart.end(nil))
        let routed = try written(channel)
        try request(channel, .GET, "/list")
        let prepared = try written(channel)
        let around = [before, HTTPDate.now]
        for text in [routed, prepared] {
            #expect(text.contains("\r\nServer: test-server\r\n"), "\(text)")
            #expect(text.contains("\r\nX-Content-Type-Options: nosniff\r\n"), "\(text)")
            #expect(text.components(separatedBy: "\r\nDate: ").count == 2, "one date: \(text)")
            #expect(around.contains { text.contains("\r\nDate: \($0)\r\n") }, "\(text)")
        }
    }

    @Test func theRoutersAnswerToAHeadHasItsHeadersAndNoBodyWhateverTheRouterWrote() throws {
        let channel = try connection()
        // One answer with a length, one that the encoder frames in chunks: neither sends a byte of body.
        for length: HTTPHeaders in [["Content-Length": "5"], [:]] {
            try request(channel, .HEAD, "/other")
            try channel.writeOutbound(HTTPServerResponsePart.head(HTTPResponseHead(version: .http1_1, status: .notFound, headers: length)))
            try channel.writeOutbound(HTTPServerResponsePart.body(.byteBuffer(ByteBuffer(string: "nope!"))))
            try channel.writeOutbound(HTTPServerResponsePart.end(nil))
            let text = try written(channel)
            #expect(text.hasPrefix("HTTP/1.1 404 Not Found\r\n"), "\(text)")
            #expect(text.contains(length.isEmpty ? "\r\ntransfer-encoding: chunked\r\n" : "\r\nContent-Length: 5\r\n"), "\(text)")
            #expect(text.hasSuffix("\r\n\r\n"), "no body, not even a last chunk: \(text)")
        }
        // The next answer, to a GET, keeps its body.
        try request(channel, .GET, "/other")
        try channel.writeOutbound(HTTPServerResponsePart.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: ["Content-Length": "5"])))
        try channel.writeOutbound(HTTPServerResponsePart.body(.byteBuffer(ByteBuffer(string: "hello"))))
        try channel.writeOutbound(HTTPServerResponsePart.end(nil))
        #expect(try written(channel).hasSuffix("\r\n\r\nhello"))
    }

    @Test func aBodyAnnouncedIsAskedForAndAnInterimContinueOfTheRoutersPassesOn() throws {
        let channel = try connection()
        try request(channel, .POST, "/echo", ["Expect": "100-continue"], body: ["hi"])
        // Told to send its body as its request arrives; Hummingbird's router sends no interim answer of its own.
        #expect(try written(channel) == "HTTP/1.1 100 Continue\r\n\r\n")
        try channel.writeOutbound(HTTPServerResponsePart.head(HTTPResponseHead(version: .http1_1, status: .continue)))
        #expect(try written(channel) == "HTTP/1.1 100 Continue\r\n\r\n")
    }

    @Test func theDateHeaderIsAnIMFFixdate() {
        #expect(HTTPDate.format(784_111_777) == "Sun, 06 Nov 1994 08:49:37 GMT")
    }

    @Test func aStreamGetsAChunkedHeadThenItsChunksAndNothingElseIsAnsweredOnItsConnection() throws {
        let reports = Reports()
        let channel = try connection(reports: reports)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        try request(channel, .GET, "/stream")
        let text = try written(channel)
        #expect(text.hasPrefix("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n"), "\(text)")
        #expect(!text.contains("Content-Length"), "\(text)")
        #expect(text.contains("\r\nServer: test-server\r\n"), "\(text)")
        #expect(text.hasSuffix("\r\n\r\n5\r\nhello\r\n"), "the head, then the first chunk: \(text)")
        #expect(reports.all == ["GET /stream 200"])
        // A request sent behind it is never answered: the stream does not end while the connection is open.
        try request(channel, .GET, "/list")
        #expect(try written(channel) == "")
        #expect(try routed(channel) == [])
    }

    @Test func aStreamsConnectionParsesNoMoreAndDropsWhatItsClientSendsAfterItsRequest() throws {
        let channel = try connection(parsing: true)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        try channel.writeInbound(ByteBuffer(string: "GET /stream HTTP/1.1\r\nHost: map.test\r\n\r\n"))
        #expect(try written(channel).hasSuffix("\r\n\r\n5\r\nhello\r\n"))
        channel.embeddedEventLoop.run()
        #expect(throws: ChannelPipelineError.notFound) {
            try channel.pipeline.syncOperations.handler(type: ByteToMessageHandler<HTTPRequestDecoder>.self)
        }
        // A request, then bytes that are no request at all: neither is answered, routed or refused.
        try channel.writeInbound(ByteBuffer(string: "GET /list HTTP/1.1\r\nHost: map.test\r\n\r\n\u{0}\u{1}garbage\r\n\r\n"))
        #expect(try written(channel) == "")
        #expect(try routed(channel) == [])
        #expect(channel.isActive)
        // The stream still ends with its client.
        channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        channel.embeddedEventLoop.run()
        #expect(try written(channel) == "0\r\n\r\n")
        #expect(!channel.isActive)
    }

    @Test func aRefusedStreamIsAnOrdinaryAnswerAndTheConnectionGoesOn() throws {
        let channel = try connection()
        try request(channel, .GET, "/stream", ["X-Refuse": "yes"])
        let refused = try written(channel)
        #expect(refused.hasPrefix("HTTP/1.1 429 Too Many Requests\r\n") && refused.hasSuffix("\r\n\r\nno"), "\(refused)")
        try request(channel, .GET, "/list")
        #expect(try written(channel).hasSuffix(#"{"results":[]}"#))
    }

    @Test func aShutdownEndsAnOpenStreamWithItsLastChunkThenClosesTheConnection() throws {
        let channel = try connection()
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        try request(channel, .GET, "/stream")
        _ = try written(channel)
        channel.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        channel.embeddedEventLoop.run()
        #expect(try written(channel) == "0\r\n\r\n")
        #expect(!channel.isActive)
    }

    @Test func anOpenStreamHoldsItsConnectionAloneAndTellsTheHandlersInFrontOfIt() throws {
        let channel = try connection()
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        try request(channel, .GET, "/list")
        try request(channel, .GET, "/stream", ["X-Refuse": "yes"])
        _ = try written(channel)
        #expect(try holder(channel) == nil, "answers and a refusal before the router settle nothing")
        #expect(try outboundEvents(channel).isEmpty)
        try request(channel, .GET, "/stream")
        #expect(try holder(channel) == .stream)
        #expect(try outboundEvents(channel).map { "\(type(of: $0))" } == ["PreparedStreamOpened"])
    }

    @Test func theFirstRequestForTheRouterHandsItTheConnection() throws {
        let channel = try connection()
        try request(channel, .GET, "/list")
        #expect(try holder(channel) == nil)
        try request(channel, .GET, "/other")
        #expect(try holder(channel) == .router)
        #expect(try routed(channel) == ["GET /other"])
    }

    @Test func aConnectionThatClosesBeforeAnyTurnIsHandedToTheRouterToEnd() throws {
        let channel = try connection()
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        let future = try #require(try channel.pipeline.syncOperations.handler(type: PreparedResponseHandler.self).holder)
        try channel.close().wait()
        #expect(try future.wait() == .router)
    }

    @Test func aStreamWhoseClientStopsSendingEndsWithItsLastChunk() throws {
        let channel = try connection()
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        try request(channel, .GET, "/stream")
        _ = try written(channel)
        // Nobody reads the connection's end for a stream, so the handler closes it.
        channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        channel.embeddedEventLoop.run()
        #expect(try written(channel) == "0\r\n\r\n")
        #expect(!channel.isActive)
    }
}

/// An answer sent many times a second goes out whole, head and body in one buffer rendered once a second
/// by each thread: the same bytes as its head and body written apart, its date that of the second it is
/// sent in.
@Suite struct WholeAnswerTests {
    let headers = AnswerHeaders(serverName: "test-server")
    let allocator = ByteBufferAllocator()

    /// `reused`: a cache's answer, sent again and again; else one made for its request.
    func answer(_ body: String, reused: Bool = true) -> PreparedResponse {
        PreparedResponse(
            status: .ok, headers: [.contentType: "application/json", .eTag: "\"abc\""], body: ByteBuffer(string: body), reused: reused)
    }

    @Test func aWholeAnswerIsItsHeadThenItsBodyAndIsKeptForItsSecond() throws {
        let list = answer(#"{"results":[]}"#)
        let second = 784_111_777
        let whole = try #require(headers.whole(list, allocator: allocator, second: second))
        var apart = headers.render(list, allocator: allocator, second: second)
        apart.writeString(#"{"results":[]}"#)
        #expect(whole == apart)
        #expect(String(buffer: whole).contains("\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\n"))
        // Kept: the same storage again, not a copy.
        let again = try #require(headers.whole(list, allocator: allocator, second: second))
        #expect(again.withUnsafeReadableBytes { $0.baseAddress } == whole.withUnsafeReadableBytes { $0.baseAddress })
    }

    @Test func theNextSecondsAnswerHasTheNextSecondsDate() throws {
        let list = answer("[1]")
        let first = try #require(headers.whole(list, allocator: allocator, second: 784_111_777))
        let next = try #require(headers.whole(list, allocator: allocator, second: 784_111_778))
        #expect(String(buffer: first).contains("Date: Sun, 06 Nov 1994 08:49:37 GMT"))
        #expect(String(buffer: next).contains("Date: Sun, 06 Nov 1994 08:49:38 GMT"))
        #expect(String(buffer: next).hasSuffix("\r\n\r\n[1]"))
    }

    @Test func overHTTPSTheKeptAnswerIsAnotherWithStrictTransportSecurity() throws {
        let list = answer("[2]")
        let plain = try #require(headers.whole(list, allocator: allocator, second: 784_111_777))
        let secure = try #require(headers.whole(list, secure: true, allocator: allocator, second: 784_111_777))
        #expect(!String(buffer: plain).contains("Strict-Transport-Security"))
        #expect(String(buffer: secure).contains("\r\nStrict-Transport-Security: max-age=31536000\r\n"))
        #expect(try #require(headers.whole(list, allocator: allocator, second: 784_111_777)) == plain)
    }

    @Test func anAnswerMadeForItsRequestIsWholeWhileItsBodyIsSmallAndIsNotKept() throws {
        let requestID = HTTPField.Name("X-Request-Id")!
        var first = answer("[3]", reused: false)
        first.append(HTTPField(name: requestID, value: "r1"))
        var second = answer("[3]", reused: false)
        second.append(HTTPField(name: requestID, value: "r2"))
        let firstWhole = try #require(headers.whole(first, allocator: allocator, second: 784_111_777))
        let secondWhole = try #require(headers.whole(second, allocator: allocator, second: 784_111_777))
        #expect(String(buffer: firstWhole).contains("\r\nX-Request-Id: r1\r\n") && String(buffer: firstWhole).hasSuffix("\r\n\r\n[3]"))
        #expect(String(buffer: secondWhole).contains("\r\nX-Request-Id: r2\r\n") && !String(buffer: secondWhole).contains("r1"))
        var apart = headers.render(second, allocator: allocator, second: 784_111_777)
        apart.writeString("[3]")
        #expect(secondWhole == apart)
        // Rendered again for a second request: not kept.
        let again = try #require(headers.whole(second, allocator: allocator, second: 784_111_777))
        #expect(again == secondWhole)
        #expect(again.withUnsafeReadableBytes { $0.baseAddress } != secondWhole.withUnsafeReadableBytes { $0.baseAddress })
        var large = answer(String(repeating: "x", count: AnswerHeaders.copied + 1), reused: false)
        #expect(headers.whole(large, allocator: allocator) == nil)
        large.append(HTTPField(name: requestID, value: "r3"))
        #expect(headers.whole(large, allocator: allocator) == nil)
    }

    @Test func answersMadeForTheirRequestsDoNotPushOutAKeptOne() throws {
        let list = answer("[6]")
        let kept = try #require(headers.whole(list, allocator: allocator, second: 784_111_777))
        for index in 0..<(AnswerHeaders.Rendered.capacity * 3) {
            _ = headers.whole(answer("[\(index)]", reused: false), allocator: allocator, second: 784_111_777)
        }
        let again = try #require(headers.whole(list, allocator: allocator, second: 784_111_777))
        #expect(again.withUnsafeReadableBytes { $0.baseAddress } == kept.withUnsafeReadableBytes { $0.baseAddress })
    }

    /// A cache's answer given with each request's own id, as the gateway gives its list: one kept buffer
    /// whose id is written in place, request by request.
    func appending(_ id: String, to cached: PreparedResponse) -> PreparedResponse {
        var answer = cached
        answer.append(Self.requestID, legalValue: id)
        return answer
    }

    static let requestID = HTTPField.Name("X-Request-Id")!

    @Test func aKeptAnswerWithAHeaderOfItsOwnIsWholeWithEachRequestsValue() throws {
        let body = String(repeating: "y", count: AnswerHeaders.copied * 3)
        let cached = answer(body)
        let ids = ["r1", "r22", "r1", String(repeating: "z", count: 128), "aa", "bb", "r333"]
        var storage: UnsafeRawPointer?
        for id in ids {
            let each = appending(id, to: cached)
            let whole = try #require(headers.whole(each, allocator: allocator, second: 784_111_777))
            var apart = headers.render(each, allocator: allocator, second: 784_111_777)
            apart.writeString(body)
            #expect(whole == apart)
            #expect(String(buffer: whole).hasPrefix("HTTP/1.1 200 OK\r\n"))
            #expect(String(buffer: whole).contains("\r\nX-Content-Type-Options: nosniff\r\nX-Request-Id: \(id)\r\n\r\n\(body)"))
            // The same storage every time: nothing holds the last answer any more.
            let base = whole.withUnsafeReadableBytes { UnsafeRawPointer($0.baseAddress!) - whole.readerIndex }
            if let storage { #expect(base == storage) }
            storage = base
        }
    }

    @Test func anAnswerStillBeingSentIsNotChangedByTheNext() throws {
        let cached = answer("[4]")
        let first = try #require(headers.whole(appending("first", to: cached), allocator: allocator, second: 784_111_777))
        let second = try #require(headers.whole(appending("second", to: cached), allocator: allocator, second: 784_111_777))
        let third = try #require(headers.whole(appending("3rd-id", to: cached), allocator: allocator, second: 784_111_777))
        #expect(String(buffer: first).contains("\r\nX-Request-Id: first\r\n\r\n[4]"))
        #expect(String(buffer: second).contains("\r\nX-Request-Id: second\r\n\r\n[4]"))
        #expect(String(buffer: third).contains("\r\nX-Request-Id: 3rd-id\r\n\r\n[4]"))
        #expect(String(buffer: first).hasPrefix("HTTP/1.1 200 OK\r\n") && String(buffer: second).hasPrefix("HTTP/1.1 200 OK\r\n"))
    }

    @Test func aValuePastTheRoomIsRenderedForItsRequestAlone() throws {
        let long = String(repeating: "v", count: AnswerHeaders.Rendered.Slot.room + 1)
        let cached = answer("[5]")
        let small = appending(long, to: cached)
        let whole = try #require(headers.whole(small, allocator: allocator, second: 784_111_777))
        #expect(String(buffer: whole).contains("\r\nX-Request-Id: \(long)\r\n\r\n[5]"))
        let large = appending(long, to: answer(String(repeating: "x", count: AnswerHeaders.copied + 1)))
        #expect(headers.whole(large, allocator: allocator) == nil)
        // The next request's short id has the kept answer again.
        let short = try #require(headers.whole(appending("s", to: cached), allocator: allocator, second: 784_111_777))
        #expect(String(buffer: short).contains("\r\nX-Request-Id: s\r\n\r\n[5]") && !String(buffer: short).contains(long))
    }

    @Test func aBodyPastTheLimitIsWrittenApart() {
        let large = answer(String(repeating: "x", count: AnswerHeaders.Rendered.largest + 1))
        #expect(headers.whole(large, allocator: allocator) == nil)
    }

    @Test func anotherAnswerIsNeverTakenForAKeptOne() throws {
        // More answers than a thread keeps, each sent twice in the same second: each gets its own bytes.
        let answers = (0..<(AnswerHeaders.Rendered.capacity * 2)).map { answer("[\($0)]") }
        for _ in 0..<2 {
            for (index, each) in answers.enumerated() {
                let whole = try #require(headers.whole(each, allocator: allocator, second: 784_111_777))
                #expect(String(buffer: whole).hasSuffix("\r\n\r\n[\(index)]"))
            }
        }
    }
}
