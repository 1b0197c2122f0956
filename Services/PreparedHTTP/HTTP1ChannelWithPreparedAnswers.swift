import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypesHTTP1

/// Hummingbird's own HTTP/1 channel, set up as it sets itself up, with handlers of ours placed right
/// after the HTTP parser, where they still see the request's version (`HTTP1ToHTTPServerCodec`, the
/// next handler, drops it): an HTTP/1.0 request keeps its meaning for `PreparedConnectionState`.
///
/// The handlers Hummingbird lets a configuration add (`additionalChannelHandlers`) come after that codec,
/// which is why the channel is wrapped rather than configured. Its idle timeout is left off: it counts
/// only the requests that reach the router, so a connection busy with answers from before the router
/// would look idle to it. `ConnectionGuard` holds the idle timeout instead, over everything read and written.
public struct HTTP1ChannelWithPreparedAnswers: ServerChildChannel, HTTPChannelHandler {
    public typealias Value = HTTP1Channel.Value

    private let base: HTTP1Channel
    /// The handlers for one connection, in pipeline order.
    private let handlers: @Sendable () -> [any ChannelHandler]

    public init(responder: @escaping HTTPChannelHandler.Responder, handlers: @escaping @Sendable () -> [any ChannelHandler]) {
        base = HTTP1Channel(responder: responder, configuration: .init(idleTimeout: nil))
        self.handlers = handlers
    }

    public var responder: HTTPChannelHandler.Responder { base.responder }

    public func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        base.setup(channel: channel, logger: logger).flatMapThrowing { value in
            let pipeline = channel.pipeline.syncOperations
            let codec = try pipeline.handler(type: HTTP1ToHTTPServerCodec.self)
            try pipeline.addHandlers(handlers(), position: .before(codec))
            return value
        }
    }

    public func handle(value: Value, logger: Logger) async {
        await base.handle(value: value, logger: logger)
    }
}
