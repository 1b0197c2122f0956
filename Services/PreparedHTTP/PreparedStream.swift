import HTTPTypes
import Hummingbird
import NIOCore
import ServiceLifecycle
import Synchronization

/// How a request for a stream is let in: refused with an answer, or admitted, in which case the handler
/// writes the stream's head and then calls `started` on the stream's event loop, from which the owner writes.
public enum PreparedStreamAdmission: Sendable {
    case refused(PreparedResponse)
    case admitted(started: @Sendable () -> Void)
}

/// A response that goes on for as long as its connection is open (Server-Sent Events), answered before the
/// router: once the request has ended, `open` is called on the connection's event loop with the stream to
/// write to, and decides whether it goes ahead.
public struct PreparedStreamOpening: Sendable, Equatable {
    /// The head's headers, but for those every answer carries and the framing (chunked).
    public let headers: HTTPFields
    public let open: @Sendable (PreparedStream) -> PreparedStreamAdmission
    private let identity = Identity()

    /// Equal only to itself (and its copies), as `PreparedDeferral`.
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.identity === rhs.identity }

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
/// Its body is sent chunk by chunk, each flushed at once: before the router, framed here and written to the
/// connection below the HTTP encoder; through the router (`routed`), handed to the response body's writer.
public final class PreparedStream: @unchecked Sendable {
    /// Bytes sent as one chunk of the body, made once for however many streams send them, with their
    /// chunked framing for the connections written to directly.
    public struct Chunk: Sendable {
        let data: ByteBuffer
        let framed: ByteBuffer

        public init(_ data: ByteBuffer) {
            var framed = ByteBuffer()
            framed.reserveCapacity(data.readableBytes + 12)
            framed.writeString(String(data.readableBytes, radix: 16))
            framed.writeStaticString("\r\n")
            framed.writeImmutableBuffer(data)
            framed.writeStaticString("\r\n")
            self.data = data
            self.framed = framed
        }
    }

    /// How long a stream that is finished may take to flush what it holds before its connection is closed anyway.
    static let finishingLimit = TimeAmount.seconds(1)

    private static let lastChunk = ByteBuffer(string: "0\r\n\r\n")

    /// Where the chunks go.
    private enum Sink {
        /// The connection, below the HTTP encoder, as the handler's own answers are written.
        case connection(any Channel, output: ChannelHandlerContext)
        /// The router's response body (`routed`).
        case body(RoutedBody)
    }

    public let eventLoop: any EventLoop
    /// The peer of the connection (the client, or a proxy in front of it).
    public let remoteAddress: SocketAddress?
    private let sink: Sink
    private var finished = false

    init(channel: any Channel, output: ChannelHandlerContext) {
        sink = .connection(channel, output: output)
        eventLoop = channel.eventLoop
        remoteAddress = channel.remoteAddress
    }

    init(body: RoutedBody, eventLoop: any EventLoop, remoteAddress: SocketAddress?) {
        sink = .body(body)
        self.eventLoop = eventLoop
        self.remoteAddress = remoteAddress
    }

    /// Completes when the stream has ended, for whatever reason (its connection closed, or its body ended).
    public var closeFuture: EventLoopFuture<Void> {
        switch sink {
        case .connection(let channel, _): channel.closeFuture
        case .body(let body): body.ended.futureResult
        }
    }

    /// False while more is unsent than the connection's high-water mark: the client reads slower than the
    /// stream is written.
    public var isWritable: Bool {
        switch sink {
        case .connection(let channel, _): channel.isWritable
        case .body(let body): body.unsent.load(ordering: .relaxed) < RoutedBody.highWaterMark
        }
    }

    public var isOpen: Bool {
        guard !finished else { return false }
        switch sink {
        case .connection(let channel, _): return channel.isActive
        case .body(let body): return !body.hasEnded
        }
    }

    /// Sends one chunk; `promise` completes once it is handed on (to the kernel, or to the body's writer).
    public func write(_ chunk: Chunk, promise: EventLoopPromise<Void>? = nil) {
        eventLoop.assertInEventLoop()
        guard !finished else {
            promise?.fail(ChannelError.ioOnClosedChannel)
            return
        }
        switch sink {
        case .connection(_, let output): output.writeAndFlush(NIOAny(chunk.framed), promise: promise)
        case .body(let body): body.send(.chunk(chunk.data, promise))
        }
    }

    /// Ends the body (its last chunk, once what was written before it has been sent), then the connection.
    public func finish() {
        eventLoop.assertInEventLoop()
        guard !finished else { return }
        finished = true
        switch sink {
        case .connection(let channel, let output):
            let promise = eventLoop.makePromise(of: Void.self)
            output.writeAndFlush(NIOAny(Self.lastChunk), promise: promise)
            // A client that reads nothing more would hold the last chunk back for ever.
            let stop = eventLoop.scheduleTask(in: Self.finishingLimit) { channel.close(promise: nil) }
            promise.futureResult.whenComplete { _ in
                stop.cancel()
                channel.close(promise: nil)
            }
        case .body(let body):
            body.send(.finish)
        }
    }

    /// Ends the connection at once, dropping what it has not sent yet.
    public func abort() {
        eventLoop.assertInEventLoop()
        finished = true
        switch sink {
        case .connection(let channel, _): channel.close(promise: nil)
        case .body(let body): body.send(.abort)
        }
    }
}

extension PreparedStream {
    /// The router's door of a stream: `opening` decides on `eventLoop` whether it goes ahead; if it does, its
    /// chunks are the response body, which ends when the stream is finished, when the connection closes,
    /// or when the server shuts down.
    public static func routed(
        _ opening: PreparedStreamOpening, on eventLoop: any EventLoop, remoteAddress: SocketAddress?,
        connectionClosed: EventLoopFuture<Void>?
    ) async throws -> Response {
        let body = RoutedBody(eventLoop: eventLoop)
        let stream = PreparedStream(body: body, eventLoop: eventLoop, remoteAddress: remoteAddress)
        switch try await eventLoop.submit({ opening.open(stream) }).get() {
        case .refused(let answer):
            return answer.response
        case .admitted(let started):
            connectionClosed?.whenComplete { _ in body.send(.abort) }
            return Response(
                status: .ok, headers: opening.headers,
                body: ResponseBody { writer in
                    eventLoop.execute(started)
                    try await body.drain(into: &writer)
                })
        }
    }
}

/// A routed stream's chunks on their way from the event loop to the response body's writer.
final class RoutedBody: Sendable {
    enum Item: Sendable {
        case chunk(ByteBuffer, EventLoopPromise<Void>?)
        case finish
        case abort
    }

    /// As much unsent as a connection holds before it stops being writable (NIO's default high-water mark).
    static let highWaterMark = 64 * 1024

    /// Bytes handed over and not yet written.
    let unsent = Atomic<Int>(0)
    /// Completes once the body has ended, whichever way.
    let ended: EventLoopPromise<Void>
    private let endedFlag = Atomic<Bool>(false)
    private let items: AsyncStream<Item>
    private let continuation: AsyncStream<Item>.Continuation

    init(eventLoop: any EventLoop) {
        ended = eventLoop.makePromise(of: Void.self)
        (items, continuation) = AsyncStream.makeStream(of: Item.self)
    }

    /// A stream refused, or never drained, has ended too.
    deinit {
        if !hasEnded { ended.succeed() }
    }

    var hasEnded: Bool { endedFlag.load(ordering: .relaxed) }

    func send(_ item: Item) {
        if case .chunk(let data, _) = item { unsent.add(data.readableBytes, ordering: .relaxed) }
        if case .dropped = continuation.yield(item), case .chunk(_, let promise) = item {
            promise?.fail(ChannelError.ioOnClosedChannel)
        }
    }

    /// Writes the chunks as they come, until the stream is finished (the body ends), aborted or the server
    /// shuts down (the connection is closed).
    func drain(into writer: inout some ResponseBodyWriter) async throws {
        defer {
            continuation.finish()
            endedFlag.store(true, ordering: .relaxed)
            ended.succeed()
        }
        var aborted = false
        try await withGracefulShutdownHandler {
            for await item in items {
                switch item {
                case .chunk(let data, let promise):
                    unsent.subtract(data.readableBytes, ordering: .relaxed)
                    do {
                        try await writer.write(data)
                        promise?.succeed()
                    } catch {
                        promise?.fail(error)
                        throw error
                    }
                case .finish:
                    return
                case .abort:
                    aborted = true
                    return
                }
            }
        } onGracefulShutdown: {
            self.continuation.yield(.finish)
        }
        if aborted { throw ChannelError.ioOnClosedChannel }
        try await writer.finish(nil)
    }
}
