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

/// A request as `PreparedAnswer` sees it: the target and the headers, straight from the HTTP parser.
public struct PreparedRequest {
    /// Path and query as sent, e.g. `/v1/StudentLocation?limit=100`.
    public let target: String
    /// The target up to its `?`, and what follows it (nil without a `?`).
    public let path: Substring
    public let query: Substring?
    let headers: HTTPHeaders

    public init(target: String, headers: HTTPHeaders) {
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

/// Decides, from a GET request's head alone, whether its answer is already in memory; nil sends the
/// request on to the router. Runs on a connection's event loop, so it must not block.
public typealias PreparedAnswer = @Sendable (PreparedRequest) -> PreparedResponse?

extension HTTPServerBuilder {
    /// HTTP/1.1 where requests that `prepared` can answer from memory are answered on the connection's
    /// event loop, and every other request goes through the router as usual.
    ///
    /// The router's path costs a task, request and response objects, a conversion of every header and the
    /// middleware chain per request: several times the cost of writing a cached list, and the list of the
    /// latest pins is by far the most common request. Both paths serve the same cache and headers, so a
    /// client cannot tell them apart.
    public static func http1(serverName: String, counters: RequestCounters, logger: Logger,
                             prepared: @escaping PreparedAnswer) -> HTTPServerBuilder {
        HTTPServerBuilder { responder in
            PreparedHTTP1Channel(responder: responder, serverName: serverName, counters: counters, logger: logger, prepared: prepared)
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
    let prepared: PreparedAnswer

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            // Hummingbird's own HTTP/1 limits.
            let decoder = HTTP1Channel.Configuration.DecoderConfiguration()
            var limits = NIOHTTPDecoderLimitConfiguration()
            limits.maxHeaderFieldSize = decoder.maxHeaderFieldSize
            limits.maxHeaderListSize = decoder.maxHeaderListSize
            limits.maxHeaderFieldCount = decoder.maxHeaderFieldCount
            let pipeline = channel.pipeline.syncOperations
            try pipeline.configureHTTPServerPipeline(
                withPipeliningAssistance: false, withErrorHandling: false, withOutboundHeaderValidation: false,
                withEncoderConfiguration: .init(), withDecoderLimitConfiguration: limits)
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

/// Answers the requests `prepared` knows the answer to, and passes every other one on unchanged.
///
/// Its answers are rendered to bytes here and written below NIO's HTTP encoder, which would otherwise
/// build a header list and check its framing for every one of them: the list's answer never changes
/// between requests but for the date.
final class PreparedResponseHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    /// `\r\nServer: <name>\r\n\r\n`: what ends every head, after the date.
    private let serverTrailer: [UInt8]
    private let counters: RequestCounters
    private let logger: Logger
    private let prepared: PreparedAnswer
    /// Requests handed to the router whose response has not ended. While there are any, every request goes
    /// to the router too: answering it here would overtake their responses on a pipelined connection.
    private var routed = 0
    /// The answer to the request being read, written once the request's end arrives.
    private var pending: PreparedResponse?
    /// Where rendered answers enter the pipeline: just below the HTTP encoder (or this handler's own
    /// place when there is none, as in a test's bare channel).
    private var output: ChannelHandlerContext?

    init(serverName: String, counters: RequestCounters, logger: Logger, prepared: @escaping PreparedAnswer) {
        serverTrailer = Array("\r\nServer: \(serverName)\r\n\r\n".utf8)
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
        switch unwrapInboundIn(data) {
        case .head(let head):
            // HTTP/1.0, and a connection that ends after this response, are left to the router, which
            // knows how to answer and end them.
            if routed == 0, head.method == .GET, head.version == .http1_1, head.isKeepAlive,
               let answer = prepared(PreparedRequest(target: head.uri, headers: head.headers)) {
                pending = answer
                logger.debug("answered from memory", metadata: ["hb.request.path": "\(head.uri)"])
                return
            }
            routed += 1
            context.fireChannelRead(data)
        case .body:
            if pending == nil { context.fireChannelRead(data) }
        case .end:
            guard let answer = pending else {
                context.fireChannelRead(data)
                return
            }
            pending = nil
            let output = self.output ?? context
            output.write(NIOAny(render(answer, allocator: context.channel.allocator)), promise: nil)
            if let body = answer.body { output.write(NIOAny(body), promise: nil) }
            output.flush()
            counters.count(answer.status)
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) { routed -= 1 }
        context.write(data, promise: promise)
    }

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
