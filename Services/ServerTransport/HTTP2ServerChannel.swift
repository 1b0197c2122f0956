import HTTPTypes
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP2
import NIOHTTPTypes
import NIOHTTPTypesHTTP2

/// An HTTP/2 connection once ALPN has chosen it: NIOHTTP2's framing, each stream set up on the connection's
/// event loop as it opens, with `streamHandlers` after the HTTP/2-to-HTTP codec.
///
/// A stream those handlers answer never needs an asynchronous channel or a task: it is answered on the event
/// loop. A stream becomes an asynchronous channel, handed to the connection's task for the router, only once
/// its request has gone past them (`RouterHandoff`). The connection's life beyond its streams (closed when
/// idle, wound down when the server stops) is `HTTP2ConnectionLife`'s.
struct HTTP2ServerChannel: Sendable {
    typealias RoutedStream = NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>

    /// The connection, and its streams for the router as they come.
    struct Value: Sendable {
        let routed: AsyncStream<RoutedStream>
        let channel: any Channel
    }

    let idleTimeout: TimeAmount
    let streamHandlers: @Sendable () -> [any ChannelHandler]

    /// Sets the connection up; on its event loop.
    func setup(channel: any Channel) throws -> Value {
        let (routed, streams) = AsyncStream.makeStream(of: RoutedStream.self)
        let life = HTTP2ConnectionLife(idleTimeout: idleTimeout)
        let pipeline = channel.pipeline.syncOperations
        _ = try pipeline.configureHTTP2Pipeline(
            mode: .server, connectionConfiguration: .init(), streamConfiguration: .init(), streamDelegate: life.streamDelegate
        ) { [streamHandlers] stream in
            stream.eventLoop.makeCompletedFuture {
                let pipeline = stream.pipeline.syncOperations
                try pipeline.addHandler(HTTP2FramePayloadToHTTPServerCodec())
                try pipeline.addHandlers(streamHandlers())
                try pipeline.addHandler(RouterHandoff(routed: streams))
            }
        }
        try pipeline.addHandler(life)
        channel.closeFuture.whenComplete { _ in streams.finish() }
        return Value(routed: routed, channel: channel)
    }

    /// Runs the router for each stream handed to it, each in a task of the connection's, until the connection
    /// closes.
    func handle(value: Value, router: some HTTPChannelHandler, logger: Logger) async {
        await withDiscardingTaskGroup { group in
            for await stream in value.routed {
                group.addTask { await router.handleHTTP(asyncChannel: stream, logger: logger) }
            }
        }
    }
}

/// The end of an HTTP/2 stream's pipeline, which only a request for the router reaches: at its first part the
/// stream becomes an asynchronous channel (its handlers added after this one) that is handed to the
/// connection's task for the router, and this handler leaves, so that part and every later one go to it.
final class RouterHandoff: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart

    private let routed: AsyncStream<HTTP2ServerChannel.RoutedStream>.Continuation

    init(routed: AsyncStream<HTTP2ServerChannel.RoutedStream>.Continuation) { self.routed = routed }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let stream: HTTP2ServerChannel.RoutedStream
        do {
            stream = try .init(wrappingChannelSynchronously: context.channel)
        } catch {
            return context.close(promise: nil)
        }
        guard case .enqueued = routed.yield(stream) else { return context.close(promise: nil) }
        context.fireChannelRead(data)
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }
}

/// An HTTP/2 connection's life beyond its streams. With no open stream for `idleTimeout` it is closed; when the
/// server asks its connections to wind down (`ChannelShouldQuiesceEvent`) it takes no new stream and is closed
/// once those it has are done. Either way the client is told first, by a GOAWAY naming the last stream taken
/// (RFC 9113 §6.8), so that it sends its next requests on a new connection. A client that closes its side is
/// answered by closing.
final class HTTP2ConnectionLife: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    private let idleTimeout: TimeAmount
    private var context: ChannelHandlerContext?
    private var openStreams = 0
    private var lastStream = HTTP2StreamID.rootStream
    private var goingAway = false
    private var idle: Scheduled<Void>?

    init(idleTimeout: TimeAmount) { self.idleTimeout = idleTimeout }

    /// Tells the handler of each stream that opens and closes. NIOHTTP2 calls it on the connection's event loop.
    var streamDelegate: some NIOHTTP2StreamDelegate { StreamDelegate(life: self) }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        waitWhileIdle()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        idle?.cancel()
        idle = nil
        self.context = nil
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        switch event {
        case is ChannelShouldQuiesceEvent: goAway()
        case ChannelEvent.inputClosed: context.close(promise: nil)
        default: break
        }
        context.fireUserInboundEventTriggered(event)
    }

    private func waitWhileIdle() {
        guard let context else { return }
        let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
        idle = context.eventLoop.scheduleTask(in: idleTimeout) { loopBound.value.goAway() }
    }

    private func goAway() {
        guard let context, !goingAway else { return }
        goingAway = true
        idle?.cancel()
        idle = nil
        let frame = HTTP2Frame(streamID: .rootStream, payload: .goAway(lastStreamID: lastStream, errorCode: .noError, opaqueData: nil))
        context.writeAndFlush(wrapOutboundOut(frame), promise: nil)
        if openStreams == 0 { context.close(promise: nil) }
    }

    fileprivate func opened(_ id: HTTP2StreamID) {
        openStreams += 1
        lastStream = max(lastStream, id)
        idle?.cancel()
        idle = nil
    }

    fileprivate func closed() {
        openStreams -= 1
        guard openStreams == 0, let context else { return }
        guard goingAway else { return waitWhileIdle() }
        // NIOHTTP2 tells of the close while it writes the stream's last frame, before that frame is flushed:
        // closed at once, the connection would drop it (a live stream's end at shutdown, say).
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.eventLoop.execute {
            loopBound.value.flush()
            loopBound.value.close(promise: nil)
        }
    }

    private struct StreamDelegate: NIOHTTP2StreamDelegate, @unchecked Sendable {
        let life: HTTP2ConnectionLife

        func streamCreated(_ id: HTTP2StreamID, channel: any Channel) {
            channel.eventLoop.assertInEventLoop()
            life.opened(id)
        }

        func streamClosed(_ id: HTTP2StreamID, channel: any Channel) {
            channel.eventLoop.assertInEventLoop()
            life.closed()
        }
    }
}
