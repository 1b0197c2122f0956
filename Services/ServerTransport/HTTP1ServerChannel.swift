import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypesHTTP1

/// Hummingbird's own HTTP/1 channel, set up as it sets itself up but for two things: the handlers given
/// (`handlers`) sit right after the HTTP parser, where they still see the request's version
/// (`HTTP1ToHTTPServerCodec`, the next handler, drops it), so an HTTP/1.0 request keeps its meaning to
/// them; and the parser does not tell the encoder of the requests it reads.
///
/// NIO's own set-up (`configureHTTPServerPipeline`) pairs those two: the parser queues each request's method
/// in the encoder, which takes one off for each answer's head it writes (to leave the body off an answer to
/// HEAD). A handler that writes its own answers below the encoder would leave a method queued for each of
/// them, for as long as a kept-alive connection lasts. Here nothing is queued, and the handlers, which see
/// every request and every answer, leave the body off the router's answers to HEAD.
///
/// The handlers Hummingbird lets a configuration add (`additionalChannelHandlers`) come after that codec,
/// which is why the channel is set up here rather than configured. Its idle timeout is left off: it counts
/// only the requests that reach the router, so a connection busy with answers from before the router would
/// look idle to it; one of the given handlers holds the idle timeout instead, over everything read and written.
///
/// A connection that becomes a stream is held by its stream alone (a handler that is `ConnectionHolding`
/// says so at the connection's first turn): the task Hummingbird's server runs for each connection, and what
/// it holds while it waits in the router's read loop, ends there. Every other connection is handed to that
/// loop at its first turn for the router. A stream still ends when the server asks its connections to wind
/// down, but the server's run no longer waits for it: the stream's owner waits for its connection to close.
public struct HTTP1ServerChannel: ServerChildChannel, HTTPChannelHandler {
    /// The connection as the router's side reads it, and who is to hold it.
    public struct Value: ServerChildChannelValue {
        let connection: HTTP1Channel.Value
        let holder: EventLoopFuture<ConnectionHolder>

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

    /// The parser's limits, Hummingbird's defaults.
    static let limits: NIOHTTPDecoderLimitConfiguration = {
        let defaults = HTTP1Channel.Configuration.DecoderConfiguration()
        var limits = NIOHTTPDecoderLimitConfiguration()
        limits.maxHeaderFieldSize = defaults.maxHeaderFieldSize
        limits.maxHeaderListSize = defaults.maxHeaderListSize
        limits.maxHeaderFieldCount = defaults.maxHeaderFieldCount
        return limits
    }()

    public func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            // A connection keeps the buffer it reads into for as long as it is open, so it starts at what a
            // request to these services takes (a GET with Parse's headers, a pin's POST) rather than NIO's
            // larger default; a read that fills it doubles the next one.
            try channel.syncOptions?.setOption(ChannelOptions.recvAllocator, value: Self.receiving)
            let pipeline = channel.pipeline.syncOperations
            try pipeline.addHandler(HTTPResponseEncoder())
            try pipeline.addHandler(ByteToMessageHandler(HTTPRequestDecoder(leftOverBytesStrategy: .dropBytes, limitConfiguration: Self.limits)))
            let ours = handlers()
            try pipeline.addHandlers(ours)
            try pipeline.addHandler(HTTP1ToHTTPServerCodec(secure: false))
            try pipeline.addHandler(HTTPConnectionStateHandler(idleTimeout: nil, logger: logger))
            let connection = try HTTP1Channel.Value(wrappingChannelSynchronously: channel, configuration: .init(isOutboundHalfClosureEnabled: true))
            let holder = ours.lazy.compactMap { ($0 as? any ConnectionHolding)?.holder }.first
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
