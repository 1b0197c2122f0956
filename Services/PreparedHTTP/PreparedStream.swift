import HTTPTypes
import NIOCore

/// How a request for a stream is let in: refused with an answer, or admitted, in which case the handler
/// writes the stream's head and then calls `started`, from which the owner writes.
public enum PreparedStreamAdmission {
    case refused(PreparedResponse)
    case admitted(started: () -> Void)
}

/// A response that goes on for as long as its connection is open (Server-Sent Events), answered before the
/// router: once the request has ended, `open` is called on the connection's event loop with the stream to
/// write to, and decides whether it goes ahead.
public struct PreparedStreamOpening: Sendable {
    /// The head's headers, but for those every answer carries and the framing (chunked).
    public let headers: HTTPFields
    public let open: @Sendable (PreparedStream) -> PreparedStreamAdmission

    public init(headers: HTTPFields, open: @escaping @Sendable (PreparedStream) -> PreparedStreamAdmission) {
        self.headers = headers
        self.open = open
    }
}

/// Sent towards the socket (an outbound user event) when a connection's stream opens: the handlers in front of
/// `PreparedResponseHandler` do not see the stream's chunks, which are written below the HTTP encoder, and
/// must not take the connection for idle.
public struct PreparedStreamOpened: Sendable {}

/// The writing end of one open stream, on its connection's event loop: every call must be made there.
/// Its body is sent with chunked framing, chunk by chunk, each flushed at once.
public final class PreparedStream: @unchecked Sendable {
    /// Bytes framed as one chunk of a chunked body, made once for however many streams send them.
    public struct Chunk: Sendable {
        let bytes: ByteBuffer

        public init(_ data: ByteBuffer) {
            var bytes = ByteBuffer()
            bytes.reserveCapacity(data.readableBytes + 12)
            bytes.writeString(String(data.readableBytes, radix: 16))
            bytes.writeStaticString("\r\n")
            bytes.writeImmutableBuffer(data)
            bytes.writeStaticString("\r\n")
            self.bytes = bytes
        }
    }

    /// How long a stream that is finished may take to flush what it holds before its connection is closed anyway.
    static let finishingLimit = TimeAmount.seconds(1)

    private static let lastChunk = ByteBuffer(string: "0\r\n\r\n")

    public let eventLoop: any EventLoop
    /// The peer of the connection (the client, or a proxy in front of it).
    public let remoteAddress: SocketAddress?
    private let channel: any Channel
    /// Where the chunks enter the pipeline: below the HTTP encoder, as the handler's own answers do.
    private let output: ChannelHandlerContext
    private var finished = false

    init(channel: any Channel, output: ChannelHandlerContext) {
        self.channel = channel
        self.output = output
        eventLoop = channel.eventLoop
        remoteAddress = channel.remoteAddress
    }

    /// Completes when the connection has closed, for whatever reason.
    public var closeFuture: EventLoopFuture<Void> { channel.closeFuture }

    /// False while the connection holds more unsent bytes than its high-water mark: the client reads
    /// slower than the stream is written.
    public var isWritable: Bool { channel.isWritable }

    public var isOpen: Bool { channel.isActive && !finished }

    /// Sends one chunk; `promise` completes once it is handed to the kernel.
    public func write(_ chunk: Chunk, promise: EventLoopPromise<Void>? = nil) {
        eventLoop.assertInEventLoop()
        guard !finished else {
            promise?.fail(ChannelError.ioOnClosedChannel)
            return
        }
        output.writeAndFlush(NIOAny(chunk.bytes), promise: promise)
    }

    /// Ends the body (its last chunk, once what was written before it has been sent), then the connection.
    public func finish() {
        eventLoop.assertInEventLoop()
        guard !finished else { return }
        finished = true
        let promise = eventLoop.makePromise(of: Void.self)
        output.writeAndFlush(NIOAny(Self.lastChunk), promise: promise)
        let channel = self.channel
        // A client that reads nothing more would hold the last chunk back for ever.
        let stop = eventLoop.scheduleTask(in: Self.finishingLimit) { channel.close(promise: nil) }
        promise.futureResult.whenComplete { _ in
            stop.cancel()
            channel.close(promise: nil)
        }
    }

    /// Ends the connection at once, dropping what it has not sent yet.
    public func abort() {
        eventLoop.assertInEventLoop()
        finished = true
        channel.close(promise: nil)
    }
}
