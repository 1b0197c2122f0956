import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTPTypes
import Synchronization

/// Decides, from the request head alone, whether an answer is already in memory; nil sends the request on
/// to the router. Runs on a connection's event loop, so it must not block.
public typealias PreparedAnswer = @Sendable (HTTPRequest) -> PreparedResponse?

extension HTTPServerBuilder {
    /// HTTP/1.1 where requests that `prepared` can answer from memory are answered on the connection's
    /// event loop, and every other request goes through the router as usual.
    ///
    /// The router's path costs a task, a request and a response object and the middleware chain per
    /// request, several times the cost of writing a cached list; the list of the latest pins is by far the
    /// most common request. Both paths serve the same cache, so a client cannot tell them apart.
    public static func http1(serverName: String, counters: RequestCounters, logger: Logger,
                             prepared: @escaping PreparedAnswer) -> HTTPServerBuilder {
        .http1(configuration: .init(additionalChannelHandlers: [
            PreparedResponseHandler(serverName: serverName, counters: counters, logger: logger, prepared: prepared)
        ]))
    }
}

/// Sits after the HTTP codec and before the router's hand-off; see `HTTPServerBuilder.http1(serverName:…)`.
final class PreparedResponseHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let serverName: String
    private let counters: RequestCounters
    private let logger: Logger
    private let prepared: PreparedAnswer
    /// Requests handed to the router whose response has not ended. While there are any, every request goes
    /// to the router too: answering it here would overtake their responses on a pipelined connection.
    private var routed = 0
    /// The answer to the request being read, written once the request's end arrives.
    private var pending: PreparedResponse?

    init(serverName: String, counters: RequestCounters, logger: Logger, prepared: @escaping PreparedAnswer) {
        self.serverName = serverName
        self.counters = counters
        self.logger = logger
        self.prepared = prepared
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let request):
            if routed == 0, request.method == .get, request.headerFields[.connection] == nil, let answer = prepared(request) {
                pending = answer
                logger.debug("answered from memory", metadata: ["hb.request.path": "\(request.path ?? "")"])
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
            var head = HTTPResponse(status: answer.status, headerFields: answer.headers)
            head.headerFields[.contentLength] = String(answer.body?.readableBytes ?? 0)
            head.headerFields[.date] = HTTPDate.now
            head.headerFields[.server] = serverName
            context.write(wrapOutboundOut(.head(head)), promise: nil)
            if let body = answer.body { context.write(wrapOutboundOut(.body(body)), promise: nil) }
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
            counters.count(answer.status)
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) { routed -= 1 }
        context.write(data, promise: promise)
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
