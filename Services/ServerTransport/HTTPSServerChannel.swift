import HummingbirdCore
import Logging
import NIOCore
import NIOSSL
import NIOTLS

/// HTTPS: TLS, then the protocol the client chose by ALPN, on the same connection.
///
/// Each new connection takes the TLS context `tls` holds at that moment, so a renewed certificate is served
/// to new connections while open ones keep the one they began with. On `http/1.1` (or when the client names
/// no protocol) the connection is the plain one's (`HTTP1ServerChannel`), with the same handlers after the
/// parser. On `h2` it is `HTTP2ServerChannel`, with `streamHandlers` on each stream; a stream they do not
/// answer goes to the router.
public struct HTTPSServerChannel: ServerChildChannel, HTTPChannelHandler {
    /// The connection once its protocol is known.
    public struct Value: ServerChildChannelValue {
        let negotiated: EventLoopFuture<Negotiated>
        public let channel: any Channel
    }

    enum Negotiated: Sendable {
        case http1(HTTP1ServerChannel.Value)
        case http2(HTTP2ServerChannel.Value)
    }

    /// What ALPN offers, best first.
    public static let applicationProtocols = ["h2", "http/1.1"]

    private let http1: HTTP1ServerChannel
    private let http2: HTTP2ServerChannel
    private let tls: @Sendable () -> NIOSSLContext
    private let handshakeTimeout: TimeAmount
    private let http2Handlers: @Sendable () -> [any ChannelHandler]

    /// - Parameters:
    ///   - tls: the TLS context for a new connection.
    ///   - handshakeTimeout: how long a client has to finish the TLS handshake.
    ///   - idleTimeout: how long an HTTP/2 connection with no open stream is kept.
    ///   - http1Handlers: an HTTP/1.1 connection's handlers after the HTTP parser, as for plain HTTP.
    ///   - http2Handlers: an HTTP/2 connection's handlers, between TLS and the HTTP/2 framing.
    ///   - streamHandlers: an HTTP/2 stream's handlers, after the HTTP/2-to-HTTP codec.
    public init(
        responder: @escaping HTTPChannelHandler.Responder, tls: @escaping @Sendable () -> NIOSSLContext,
        handshakeTimeout: Duration, idleTimeout: Duration,
        http1Handlers: @escaping @Sendable () -> [any ChannelHandler], http2Handlers: @escaping @Sendable () -> [any ChannelHandler],
        streamHandlers: @escaping @Sendable () -> [any RemovableChannelHandler]
    ) {
        http1 = HTTP1ServerChannel(responder: responder, handlers: http1Handlers)
        http2 = HTTP2ServerChannel(idleTimeout: TimeAmount(idleTimeout), streamHandlers: streamHandlers)
        self.tls = tls
        self.handshakeTimeout = TimeAmount(handshakeTimeout)
        self.http2Handlers = http2Handlers
    }

    public var responder: HTTPChannelHandler.Responder { http1.responder }

    public func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            let pipeline = channel.pipeline.syncOperations
            try pipeline.addHandler(NIOSSLServerHandler(context: tls()))
            try pipeline.addHandler(TLSHandshakeDeadline(timeout: handshakeTimeout))
            let negotiation = NIOTypedApplicationProtocolNegotiationHandler<Negotiated> { result, channel in
                switch result {
                case .negotiated("h2"):
                    return channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandlers(http2Handlers())
                        return .http2(try http2.setup(channel: channel))
                    }
                default:
                    return http1.setup(channel: channel, logger: logger).map { .http1($0) }
                }
            }
            try pipeline.addHandler(negotiation)
            return Value(negotiated: negotiation.protocolNegotiationResult, channel: channel)
        }
    }

    public func handle(value: Value, logger: Logger) async {
        let negotiated: Negotiated
        do {
            negotiated = try await withTaskCancellationHandler {
                try await value.negotiated.get()
            } onCancel: {
                value.channel.close(promise: nil)
            }
        } catch {
            logger.debug("TLS connection ended before its protocol was chosen", metadata: ["error": "\(error)"])
            return
        }
        switch negotiated {
        case .http1(let connection): await http1.handle(value: connection, logger: logger)
        case .http2(let connection): await http2.handle(value: connection, router: self, logger: logger)
        }
    }
}

/// Closes a connection whose TLS handshake has not finished in time (a client that opens a connection and
/// sends nothing, or a byte now and then), then leaves the pipeline.
final class TLSHandshakeDeadline: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = Any

    private let timeout: TimeAmount
    private var deadline: Scheduled<Void>?

    init(timeout: TimeAmount) { self.timeout = timeout }

    func handlerAdded(context: ChannelHandlerContext) {
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        deadline = context.eventLoop.scheduleTask(in: timeout) { loopBound.value.close(promise: nil) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = nil
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        context.fireUserInboundEventTriggered(event)
        if case .handshakeCompleted = event as? TLSUserEvent {
            deadline?.cancel()
            deadline = nil
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
        }
    }
}
