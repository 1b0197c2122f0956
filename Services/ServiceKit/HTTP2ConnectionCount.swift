import Logging
import NIOCore

/// An HTTP/2 connection in the counts `ConnectionGuard` keeps for HTTP/1.1 (`CountedConnection`): among the
/// open connections, and against its client address's limit (`MAX_CONNECTIONS_PER_CLIENT`), shared with that
/// address's HTTP/1.1 connections. Past the limit the connection is closed as soon as ALPN has chosen HTTP/2:
/// before its first stream there is no request to answer. Each connection's streams are bounded by NIOHTTP2,
/// and its idle time by the HTTP/2 channel.
final class HTTP2ConnectionCount: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private var counted: CountedConnection
    private let logger: Logger

    init(perAddress: ConnectionsPerAddress, trustedProxies: TrustedProxies, logger: Logger) {
        counted = CountedConnection(perAddress: perAddress, trustedProxies: trustedProxies)
        self.logger = logger
    }

    /// Added once ALPN has chosen HTTP/2, so the connection is already active.
    func handlerAdded(context: ChannelHandlerContext) {
        if counted.start(remote: context.channel.remoteAddress, logger: logger) { context.close(promise: nil) }
    }

    func channelInactive(context: ChannelHandlerContext) {
        counted.stop()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        counted.stop()
    }
}
