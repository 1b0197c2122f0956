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
///
/// A connection that becomes a stream (`PreparedStream`) is held by its stream alone: the task Hummingbird's
/// server runs for each connection (5.9 KB of frames while it waits in the router's read loop) ends there.
/// Every other connection is handed to that loop at its first turn for the router. A stream still ends when
/// the server asks its connections to wind down, but the server's run no longer waits for it: the stream's
/// owner waits for its connection to close (`PreparedStream.closeFuture`).
public struct HTTP1ChannelWithPreparedAnswers: ServerChildChannel, HTTPChannelHandler {
    /// The connection as the router's side reads it, and who is to hold it.
    public struct Value: ServerChildChannelValue {
        let connection: HTTP1Channel.Value
        let holder: EventLoopFuture<PreparedConnectionHolder>

        public var channel: any Channel { connection.channel }
    }

    private let base: HTTP1Channel
    /// The handlers for one connection, in pipeline order.
    private let handlers: @Sendable () -> [any ChannelHandler]

    public init(responder: @escaping HTTPChannelHandler.Responder, handlers: @escaping @Sendable () -> [any ChannelHandler]) {
        base = HTTP1Channel(responder: responder, configuration: .init(idleTimeout: nil))
        self.handlers = handlers
    }

    public var responder: HTTPChannelHandler.Responder { base.responder }

    static let receiving = AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 1024, maximum: 65536)

    public func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        base.setup(channel: channel, logger: logger).flatMapThrowing { connection in
            // A connection keeps the buffer it reads into for as long as it is open: NIO's first is 2 KB,
            // twice what a request to these services takes (a GET with Parse's headers, a pin's POST). A
            // read that fills it doubles the next one.
            try channel.syncOptions?.setOption(ChannelOptions.recvAllocator, value: Self.receiving)
            let pipeline = channel.pipeline.syncOperations
            let codec = try pipeline.handler(type: HTTP1ToHTTPServerCodec.self)
            try pipeline.addHandlers(handlers(), position: .before(codec))
            let holder = try pipeline.handler(type: PreparedResponseHandler.self).holder
            return Value(connection: connection, holder: holder ?? channel.eventLoop.makeSucceededFuture(.router))
        }
    }

    public func handle(value: Value, logger: Logger) async {
        let holder = await withTaskCancellationHandler {
            try? await value.holder.get()
        } onCancel: {
            value.channel.close(promise: nil)
        }
        guard holder == .stream else { return await base.handle(value: value.connection, logger: logger) }
        // NIO stops reading a channel for good once the inbound side of its `NIOAsyncChannel` is let go,
        // and would no longer see the client leave: the value stays with the channel until it closes.
        let connection = value.connection
        value.channel.closeFuture.whenComplete { _ in withExtendedLifetime(connection) {} }
    }
}
