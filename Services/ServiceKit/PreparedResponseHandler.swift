import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1
import Synchronization

/// A request as `PreparedAnswer` sees it: the method, the target and the headers, straight from the HTTP parser.
public struct PreparedRequest {
    public let method: HTTPMethod
    /// Path and query as sent, e.g. `/v1/StudentLocation?limit=100`.
    public let target: String
    /// The target up to its `?`, and what follows it (nil without a `?`).
    public let path: Substring
    public let query: Substring?
    public let headers: HTTPHeaders

    public init(method: HTTPMethod = .GET, target: String, headers: HTTPHeaders) {
        self.method = method
        self.target = target
        self.headers = headers
        // By bytes: splitting the String by Characters showed as 7% of the hot read's CPU.
        if let mark = target.utf8.firstIndex(of: UInt8(ascii: "?")) {
            path = target[..<mark]
            query = target[target.utf8.index(after: mark)...]
        } else {
            path = target[...]
            query = nil
        }
    }

    public func header(_ name: HTTPField.Name) -> String? { headers.first(name: name.rawName) }
}

/// How a request that skips the router is answered.
public enum PreparedHandling: Sendable {
    /// At once, from memory.
    case answer(PreparedResponse)
    /// Once its body has arrived, by a future that completes on the connection's event loop.
    case deferred(PreparedDeferral)
}

/// The answer to a request with a body, worked out on the connection's event loop.
public struct PreparedDeferral: Sendable {
    /// The longest body passed on: a longer one is dropped as it arrives, and `respond` gets nil (and
    /// decides when to say so: after the checks that come first, say).
    public let bodyLimit: Int
    public let respond: @Sendable (_ body: ByteBuffer?, _ eventLoop: any EventLoop) -> EventLoopFuture<PreparedResponse>

    public init(
        bodyLimit: Int,
        respond: @escaping @Sendable (_ body: ByteBuffer?, _ eventLoop: any EventLoop) -> EventLoopFuture<PreparedResponse>
    ) {
        self.bodyLimit = bodyLimit
        self.respond = respond
    }
}

/// Decides, from a request's head alone, whether it skips the router; nil sends it on to the router.
/// Runs on a connection's event loop, so it must not block.
public typealias PreparedAnswer = @Sendable (PreparedRequest) -> PreparedHandling?

extension HTTPServerBuilder {
    /// HTTP/1.1 where the requests `prepared` takes are answered on the connection's event loop (from
    /// memory, or by a future that completes there), and every other request goes through the router as usual.
    ///
    /// The router's path costs a task, request and response objects, a conversion of every header and the
    /// middleware chain per request: several times the cost of writing a cached list, and the list of the
    /// latest pins is by far the most common request. Both paths serve the same cache and headers, so a
    /// client cannot tell them apart.
    ///
    /// `limits` bound what each connection and each client address may hold (`ConnectionGuard`).
    public static func http1(
        serverName: String, counters: RequestCounters, logger: Logger, limits: ConnectionLimits = .init(),
        prepared: @escaping PreparedAnswer
    ) -> HTTPServerBuilder {
        HTTPServerBuilder { responder in
            PreparedHTTP1Channel(
                responder: responder, serverName: serverName, counters: counters, logger: logger, limits: limits,
                perAddress: ConnectionsPerAddress(limit: limits.connectionsPerAddress), prepared: prepared)
        }
    }
}

/// Hummingbird's HTTP/1 channel with `PreparedResponseHandler` placed right after the HTTP parser, before
/// the conversion to the router's request type.
struct PreparedHTTP1Channel: ServerChildChannel, HTTPChannelHandler {
    typealias Value = NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>

    let responder: HTTPChannelHandler.Responder
    let serverName: String
    let counters: RequestCounters
    let logger: Logger
    let limits: ConnectionLimits
    let perAddress: ConnectionsPerAddress
    let prepared: PreparedAnswer

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            // Hummingbird's own HTTP/1 limits.
            let decoder = HTTP1Channel.Configuration.DecoderConfiguration()
            var decoderLimits = NIOHTTPDecoderLimitConfiguration()
            decoderLimits.maxHeaderFieldSize = decoder.maxHeaderFieldSize
            decoderLimits.maxHeaderListSize = decoder.maxHeaderListSize
            decoderLimits.maxHeaderFieldCount = decoder.maxHeaderFieldCount
            let pipeline = channel.pipeline.syncOperations
            try pipeline.configureHTTPServerPipeline(
                withPipeliningAssistance: false, withErrorHandling: false, withOutboundHeaderValidation: false,
                withEncoderConfiguration: .init(), withDecoderLimitConfiguration: decoderLimits)
            try pipeline.addHandler(ConnectionGuard(limits: limits, perAddress: perAddress, logger: self.logger))
            try pipeline.addHandler(PreparedResponseHandler(serverName: serverName, counters: counters, logger: self.logger, prepared: prepared))
            try pipeline.addHandler(HTTP1ToHTTPServerCodec(secure: false))
            try pipeline.addHandler(HTTPConnectionStateHandler(idleTimeout: nil, logger: logger))
            return try NIOAsyncChannel(wrappingChannelSynchronously: channel, configuration: .init(isOutboundHalfClosureEnabled: true))
        }
    }

    func handle(value asyncChannel: Value, logger: Logger) async {
        await handleHTTP(asyncChannel: asyncChannel, logger: logger)
    }
}

/// Answers the requests `prepared` takes, and passes every other one on unchanged.
///
/// Its answers are rendered to bytes here and written below NIO's HTTP encoder, which would otherwise
/// build a header list and check its framing for every one of them: the list's answer never changes
/// between requests but for the date.
final class PreparedResponseHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    /// What is done with the request being read.
    private enum Current {
        /// Passed to the router, part by part.
        case routing
        /// Answered from memory once its end arrives.
        case answering(PreparedResponse)
        /// Its body collected for `deferral` (`nil` once past the limit).
        case collecting(PreparedDeferral, body: ByteBuffer?)
        /// Read, and its deferred answer being worked out. What arrives meanwhile (a pipelined request) is
        /// held back, and then no more is read, until the answer has been written.
        case awaiting
    }

    /// `\r\nServer: <name>\r\nX-Content-Type-Options: nosniff\r\n\r\n`: what ends every head, after the date.
    private let serverTrailer: [UInt8]
    private let counters: RequestCounters
    private let logger: Logger
    private let prepared: PreparedAnswer
    /// Requests handed to the router whose response has not ended. While there are any, every request goes
    /// to the router too: answering it here would overtake their responses on a pipelined connection.
    private var routed = 0
    private var current = Current.routing
    /// The route (method and path pattern) and start of the request this handler is answering, for its metrics.
    private var answering: (route: String, since: ContinuousClock.Instant)?
    private var held: [HTTPServerRequestPart] = []
    private var readPending = false
    /// The server asked connections to wind down while an answer of this handler's was owed: the request
    /// is finished first, and the connection closed after (by the handlers that track the router's requests).
    private var quiescePending = false
    /// Where rendered answers enter the pipeline: just below the HTTP encoder (or this handler's own
    /// place when there is none, as in a test's bare channel).
    private var output: ChannelHandlerContext?

    init(serverName: String, counters: RequestCounters, logger: Logger, prepared: @escaping PreparedAnswer) {
        serverTrailer = Array("\r\nServer: \(serverName)\r\n\(Self.noSniff.name): \(Self.noSniff.value)\r\n\r\n".utf8)
        self.counters = counters
        self.logger = logger
        self.prepared = prepared
    }

    func handlerAdded(context: ChannelHandlerContext) {
        output = try? context.pipeline.syncOperations.context(handlerType: HTTPResponseEncoder.self)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        output = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        handle(unwrapInboundIn(data), context: context)
    }

    private func handle(_ part: HTTPServerRequestPart, context: ChannelHandlerContext) {
        switch (part, current) {
        case (_, .awaiting):
            held.append(part)
        case (.head(var head), _):
            current = decide(head)
            if case .routing = current {
                routed += 1
                // The router closes a connection after its answer only when the request says `Connection:
                // close`; an HTTP/1.0 request means the same by saying nothing.
                if !head.isKeepAlive, !head.headers[canonicalForm: "Connection"].contains(where: { $0.lowercased() == "close" }) {
                    head.headers.add(name: "Connection", value: "close")
                }
                context.fireChannelRead(wrapInboundOut(.head(head)))
            }
        case (.body, .routing), (.end, .routing):
            context.fireChannelRead(wrapInboundOut(part))
        case (.body, .answering):
            break
        case (.body(var chunk), .collecting(let deferral, var body)):
            // Let go of the state's copy first, so that the body grows in place.
            current = .routing
            if body.map({ $0.readableBytes + chunk.readableBytes <= deferral.bodyLimit }) == true {
                body!.writeBuffer(&chunk)
            } else {
                body = nil
            }
            current = .collecting(deferral, body: body)
        case (.end, .answering(let answer)):
            resume(after: answer, context: context)
        case (.end, .collecting(let deferral, let body)):
            current = .awaiting
            let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
            let loopContext = NIOLoopBound(context, eventLoop: context.eventLoop)
            deferral.respond(body, context.eventLoop).hop(to: context.eventLoop).whenComplete { result in
                let answer: PreparedResponse
                switch result {
                case .success(let success): answer = success
                case .failure(let error):
                    handler.value.logger.error("request failed", metadata: ["error": "\(String(reflecting: error))"])
                    answer = PreparedResponse(status: .internalServerError, headers: [:], body: nil)
                }
                handler.value.resume(after: answer, context: loopContext.value)
            }
        }
    }

    /// How a request is handled, from its head. HTTP/1.0, a connection that ends after this response,
    /// and a body announced with `Expect: 100-continue` are left to the router, which knows how to answer.
    private func decide(_ head: HTTPRequestHead) -> Current {
        guard routed == 0, head.version == .http1_1, head.isKeepAlive, !head.headers.contains(name: "Expect"),
            let handling = prepared(PreparedRequest(method: head.method, target: head.uri, headers: head.headers))
        else { return .routing }
        logger.debug("answered before the router", metadata: ["hb.request.method": "\(head.method)", "hb.request.path": "\(head.uri)"])
        answering = (Self.route(head.method, head.uri), .now)
        switch handling {
        case .answer(let answer): return .answering(answer)
        case .deferred(let deferral): return .collecting(deferral, body: ByteBuffer())
        }
    }

    /// Writes an answer of this handler's, then goes on with what arrived meanwhile (or, when the server is
    /// shutting down, lets the connection close).
    private func resume(after answer: PreparedResponse, context: ChannelHandlerContext) {
        write(answer, context: context)
        current = .routing
        if quiescePending {
            quiescePending = false
            held = []
            context.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
            return
        }
        while !isAwaiting, !held.isEmpty {
            handle(held.removeFirst(), context: context)
        }
        if !isAwaiting, readPending {
            readPending = false
            context.read()
        }
    }

    private func write(_ answer: PreparedResponse, context: ChannelHandlerContext) {
        let output = self.output ?? context
        output.write(NIOAny(render(answer, allocator: context.channel.allocator)), promise: nil)
        if let body = answer.body { output.write(NIOAny(body), promise: nil) }
        output.flush()
        counters.count(answer.status)
        if let answering { OperatorMetrics.answered(route: answering.route, status: answer.status, since: answering.since) }
        answering = nil
    }

    /// The pattern of a path this handler answers, as the router names its routes: a collection is its own
    /// pattern; a PUT or DELETE names one pin, whose id is the last segment.
    static func route(_ method: HTTPMethod, _ target: String) -> String {
        let path = target.prefix { $0 != "?" }
        if method == .PUT || method == .DELETE, let slash = path.lastIndex(of: "/") {
            return "\(method.rawValue) \(path[...slash]):objectId"
        }
        return "\(method.rawValue) \(path)"
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is ChannelShouldQuiesceEvent, isOwingAnswer {
            quiescePending = true
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    /// A request of this handler's is being read or answered, so its answer is still to come.
    private var isOwingAnswer: Bool {
        if case .routing = current { return false }
        return true
    }

    private var isAwaiting: Bool {
        if case .awaiting = current { return true }
        return false
    }

    func read(context: ChannelHandlerContext) {
        // Reading stops only once a pipelined request is actually held back: pausing and resuming for every
        // deferred answer would cost two `epoll_ctl` calls each, for clients that send one request at a time.
        if isAwaiting, !held.isEmpty {
            readPending = true
        } else {
            context.read()
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(var head):
            head.headers.replaceOrAdd(name: Self.noSniff.name, value: Self.noSniff.value)
            context.write(wrapOutboundOut(.head(head)), promise: promise)
        case .end:
            routed -= 1
            context.write(data, promise: promise)
        case .body:
            context.write(data, promise: promise)
        }
    }

    /// On every answer, whichever door it leaves by: a browser must never guess a type other than the one
    /// we name (a JSON answer that holds a student's text taken for HTML, say).
    static let noSniff = (name: "X-Content-Type-Options", value: "nosniff")

    /// The head of `answer`, with the headers every response of ours carries.
    private func render(_ answer: PreparedResponse, allocator: ByteBufferAllocator) -> ByteBuffer {
        var head = allocator.buffer(capacity: answer.head.readableBytes + 48 + serverTrailer.count)
        head.writeImmutableBuffer(answer.head)
        head.writeStaticString("Date: ")
        head.writeString(HTTPDate.now)
        head.writeBytes(serverTrailer)
        return head
    }
}

/// The `Date` header's value (RFC 9110 IMF-fixdate), formatted once a second.
enum HTTPDate {
    private static let cache = Mutex<(second: Int, text: String)>((-1, ""))

    static var now: String {
        let second = time(nil)
        return cache.withLock { cache in
            if cache.second != second { cache = (second, format(second)) }
            return cache.text
        }
    }

    static func format(_ second: Int) -> String {
        var seconds = time_t(second)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(days[Int(parts.tm_wday)]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon)]) \(parts.tm_year + 1900) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
    }
}
