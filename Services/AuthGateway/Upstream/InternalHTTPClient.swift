import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// Keep-alive HTTP/1.1 to locations-service, the gateway's own hop, with connections pooled per event
/// loop: a request forwarded from a client connection's event loop is sent, answered and passed back on
/// that same loop, without a thread switch on the way.
///
/// A client of its own because this hop is the gateway's hottest path and needs none of what a general
/// client carries (TLS, redirects, cookies, a pool shared across loops), and is sent, answered and passed
/// back without leaving the loop. AsyncHTTPClient speaks to the outside services (Udacity, Facebook, a
/// geocoder).
final class InternalHTTPClient: LocationsHop {
    struct Endpoint: Sendable, Equatable {
        let host: String
        let port: Int
        /// A path the service is mounted under ("" for none), without a trailing slash.
        let basePath: String

        /// Plain `http://host[:port][/base]`: the hop stays inside the deployment, so it has no TLS.
        init?(url: String) {
            guard let parts = URLComponents(string: url), parts.scheme == "http", let host = parts.host, !host.isEmpty,
                parts.query == nil, parts.fragment == nil, parts.user == nil
            else { return nil }
            self.host = host
            port = parts.port ?? 80
            basePath = parts.path.hasSuffix("/") ? String(parts.path.dropLast()) : parts.path
        }

        var hostHeader: String { port == 80 ? host : "\(host):\(port)" }
    }

    typealias Answer = HopAnswer
    typealias Failure = HopFailure

    var endpoint: Endpoint { settings.endpoint }
    private let group: any EventLoopGroup
    private let settings: Settings
    private let pools = Mutex<[ObjectIdentifier: LoopPool]>([:])
    /// The pipeline's generic answer reader, its type made here, on the thread that makes the client, before
    /// the event loops' first connections ask for it at the same moment: two loops making it at once crashed
    /// the Swift runtime (signal 11, a null type read while checking `HTTPDecoder`'s conformance to
    /// `ByteToMessageDecoder`) in one gateway start of the test suites' several hundred.
    private let answerReader: Any.Type = ByteToMessageHandler<HTTPResponseDecoder>.self

    /// What each event loop's pool needs to know of the client: a copy, since connections may still close
    /// after the client is gone.
    fileprivate struct Settings: Sendable {
        let endpoint: Endpoint
        let connectTimeout: TimeAmount
        /// The longest answer read; the service's largest is a list of 1,000 pins.
        let maximumAnswer: Int
        /// Per event loop. At most 32 connections: a burst of clients does not open a connection each to the
        /// service (which caps the connections one address may hold), and 32 in flight per core already keep
        /// its PostgreSQL pool busy. The idle lifetime stays well inside the service's idle timeout
        /// (`ConnectionLimits.idleTimeout`, 60 s).
        let limits: HopPoolState<ExchangeHandler, Exchange>.Limits
        /// The one time the pool and its requests' deadlines are read in; a test moves its own.
        let now: @Sendable () -> NIODeadline
    }

    init(
        endpoint: Endpoint, group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        connectTimeout: TimeAmount = .seconds(1), maximumAnswer: Int = 8 << 20, maximumConnections: Int = 32, maximumWaiting: Int = 4096,
        idleLifetime: TimeAmount = .seconds(30), now: @escaping @Sendable () -> NIODeadline = { .now() }
    ) {
        self.group = group
        settings = Settings(
            endpoint: endpoint, connectTimeout: connectTimeout, maximumAnswer: maximumAnswer,
            limits: .init(maximumConnections: maximumConnections, maximumWaiting: maximumWaiting, idleLifetime: idleLifetime), now: now)
    }

    /// Sends one request on `eventLoop` (any of the group's when nil) and reads the whole answer. It fails
    /// when the service cannot be reached, closes the connection first, or has not answered in `timeout`.
    func execute(
        method: HTTPMethod, target: String, headers: HTTPFields, body: ByteBuffer?,
        timeout: TimeAmount, on eventLoop: (any EventLoop)? = nil
    ) -> EventLoopFuture<Answer> {
        let loop = eventLoop ?? group.next()
        guard loop.inEventLoop else {
            return loop.flatSubmit { self.execute(method: method, target: target, headers: headers, body: body, timeout: timeout, on: loop) }
        }
        let exchange = Exchange(
            method: method,
            bytes: Self.request(method: method, target: endpoint.basePath + target, host: endpoint.hostHeader, headers: headers, body: body),
            keepAlive: !headers.contains { $0.name == .connection && $0.value.lowercased().contains("close") },
            promise: loop.makePromise(), deadline: settings.now() + timeout)
        pool(for: loop).send(exchange)
        return exchange.promise.futureResult
    }

    /// The request as it goes on the wire, head and body in one buffer, written here rather than by NIO's
    /// encoder from a header list made for it: this hop is the gateway's busiest write. The fields are the
    /// client's, already checked by the server's parser, and our own; `Host` and the body's framing
    /// (`Content-Length`, never `Transfer-Encoding`) are the hop's own.
    static func request(method: HTTPMethod, target: String, host: String, headers: HTTPFields, body: ByteBuffer?) -> ByteBuffer {
        let length = 64 + method.rawValue.utf8.count + target.utf8.count + host.utf8.count + headers.wireLength
        var wire = ByteBufferAllocator().buffer(capacity: length + (body?.readableBytes ?? 0))
        wire.writeString(method.rawValue)
        wire.writeStaticString(" ")
        wire.writeString(target)
        wire.writeStaticString(" HTTP/1.1\r\nHost: ")
        wire.writeString(host)
        wire.writeStaticString("\r\n")
        for field in headers where field.name != .host && field.name != .contentLength && field.name != .transferEncoding {
            wire.writeField(field)
        }
        if var body {
            wire.writeStaticString("Content-Length: ")
            wire.writeString(String(body.readableBytes))
            wire.writeStaticString("\r\n\r\n")
            wire.writeBuffer(&body)
        } else {
            wire.writeStaticString("\r\n")
        }
        return wire
    }

    /// Connections open (or being opened) in `loop`'s pool: one the service closed counts until the pool
    /// has seen it close.
    func openConnections(on loop: any EventLoop) -> EventLoopFuture<Int> {
        loop.submit { self.pool(for: loop).state.open }
    }

    /// Closes the idle connections; later requests open new ones.
    func closeIdleConnections() {
        for pool in pools.withLock({ Array($0.values) }) {
            pool.loop.execute { pool.closeIdle() }
        }
    }

    private func pool(for loop: any EventLoop) -> LoopPool {
        pools.withLock { pools in
            if let pool = pools[ObjectIdentifier(loop)] { return pool }
            let pool = LoopPool(loop: loop, settings: settings)
            pools[ObjectIdentifier(loop)] = pool
            return pool
        }
    }

    fileprivate struct Exchange: Sendable {
        let method: HTTPMethod
        /// The whole request (`request(method:target:host:headers:body:)`).
        let bytes: ByteBuffer
        let keepAlive: Bool
        let promise: EventLoopPromise<Answer>
        /// In the pool's time (`Settings.now`).
        let deadline: NIODeadline
    }

    /// One event loop's pool: `HopPoolState` decides, this does what it says. Touched only on that loop.
    fileprivate final class LoopPool: @unchecked Sendable {
        let loop: any EventLoop
        let settings: Settings
        fileprivate var state: HopPoolState<ExchangeHandler, Exchange>

        init(loop: any EventLoop, settings: Settings) {
            self.loop = loop
            self.settings = settings
            state = HopPoolState(limits: settings.limits)
        }

        func send(_ exchange: Exchange) {
            loop.preconditionInEventLoop()
            perform(state.send(exchange, deadline: exchange.deadline, now: settings.now()))
        }

        /// A connection whose exchange ended cleanly, ready for the next request.
        func released(_ connection: ExchangeHandler) { perform(state.released(connection, now: settings.now())) }

        /// A connection ended, or could not be opened (nil).
        func closed(_ connection: ExchangeHandler?) { perform(state.closed(connection, now: settings.now())) }

        func closeIdle() {
            for connection in state.takeIdle() { connection.close() }
        }

        private func perform(_ action: HopPoolState<ExchangeHandler, Exchange>.Action) {
            for connection in action.close { connection.close() }
            for exchange in action.expired { exchange.promise.fail(Failure.timedOut) }
            switch action.next {
            case .none: break
            case .start(let exchange, let connection): connection.start(exchange)
            case .connect(let exchange): connect(for: exchange)
            case .refuse(let exchange): exchange.promise.fail(Failure.overloaded)
            }
        }

        private func connect(for exchange: Exchange) {
            ClientBootstrap(group: loop)
                .connectTimeout(settings.connectTimeout)
                .channelOption(.tcpOption(.tcp_nodelay), value: 1)
                .channelInitializer { [settings] channel in
                    channel.eventLoop.makeCompletedFuture {
                        // NIO's parser reads the answers; the requests are written whole (`RequestWriter`).
                        try channel.pipeline.syncOperations.addHandlers([
                            RequestWriter(), ByteToMessageHandler(HTTPResponseDecoder(leftOverBytesStrategy: .dropBytes)),
                            ExchangeHandler(pool: self, maximumAnswer: settings.maximumAnswer),
                        ])
                    }
                }
                .connect(host: settings.endpoint.host, port: settings.endpoint.port)
                .whenComplete { result in
                    switch result {
                    case .success(let channel):
                        do {
                            try channel.pipeline.syncOperations.handler(type: ExchangeHandler.self).start(exchange)
                        } catch {
                            exchange.promise.fail(error)
                            channel.close(promise: nil)
                        }
                    case .failure(let error):
                        exchange.promise.fail(error)
                        self.closed(nil)
                    }
                }
        }
    }

    /// One connection: `HopExchangeState` decides, this writes the request, reads the answer into it, and
    /// times the exchange.
    fileprivate final class ExchangeHandler: ChannelInboundHandler, Hashable {
        typealias InboundIn = HTTPClientResponsePart
        typealias OutboundOut = HTTPClientRequestPart

        private let pool: LoopPool
        private var state: HopExchangeState<Exchange>
        private var context: ChannelHandlerContext?
        /// The exchange under way's deadline (in the pool's time), nil between exchanges.
        private var deadline: NIODeadline?
        /// Fires at or before `deadline`: one timer per connection rather than one per exchange, since
        /// arming and cancelling a scheduled task costs more than the rest of an exchange's bookkeeping. At
        /// each firing it fails an exchange whose time is up, or is armed again for the one under way.
        private var timer: (task: Scheduled<Void>, at: NIODeadline)?

        init(pool: LoopPool, maximumAnswer: Int) {
            self.pool = pool
            state = HopExchangeState(maximumAnswer: maximumAnswer)
        }

        static func == (left: ExchangeHandler, right: ExchangeHandler) -> Bool { left === right }
        func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }

        func handlerAdded(context: ChannelHandlerContext) { self.context = context }

        func start(_ exchange: Exchange) {
            guard context?.channel.isActive == true else { return exchange.promise.fail(Failure.connectionClosed) }
            perform(state.start(exchange, keepAlive: exchange.keepAlive))
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            perform(state.read(unwrapInboundIn(data)))
        }

        func channelInactive(context: ChannelHandlerContext) {
            perform(state.fail(Failure.connectionClosed))
            timer?.task.cancel()
            timer = nil
            pool.closed(self)
            context.fireChannelInactive()
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            perform(state.fail(error))
        }

        func close() { context?.close(promise: nil) }

        private func arm(at when: NIODeadline, on loop: any EventLoop) {
            let handler = NIOLoopBound(self, eventLoop: loop)
            timer = (loop.scheduleTask(in: when - pool.settings.now()) { handler.value.fire() }, when)
        }

        /// The timer's firing: an exchange whose time is up fails; one with time left is timed again; with
        /// none under way, the connection is untimed until its next exchange.
        private func fire() {
            timer = nil
            guard let deadline, let context else { return }
            if pool.settings.now() >= deadline {
                perform(state.fail(Failure.timedOut))
            } else {
                arm(at: deadline, on: context.eventLoop)
            }
        }

        private func perform(_ action: HopExchangeState<Exchange>.Action) {
            guard let context else { return }
            switch action {
            case .none:
                break
            case .send(let exchange):
                deadline = exchange.deadline
                if let timer, timer.at <= exchange.deadline {
                    // Armed for an earlier deadline: at its firing it is armed again for this one.
                } else {
                    timer?.task.cancel()
                    arm(at: exchange.deadline, on: context.eventLoop)
                }
                // The parser is told the request's method (an answer to a HEAD has no body), then the
                // request goes out whole.
                context.write(wrapOutboundOut(.head(HTTPRequestHead(version: .http1_1, method: exchange.method, uri: ""))), promise: nil)
                context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(exchange.bytes))), promise: nil)
            case .finish(let exchange, let result, let reuse):
                deadline = nil
                if !reuse {
                    timer?.task.cancel()
                    timer = nil
                }
                if reuse { pool.released(self) } else { close() }
                exchange.promise.completeWith(result)
            case .close:
                close()
            }
        }
    }

    /// Between NIO's parser, which learns each request's method from the head written past it, and the
    /// socket: a request is written as one buffer (`Exchange.bytes`) in a body part, and its head part,
    /// there for the parser, is not written again.
    fileprivate final class RequestWriter: ChannelOutboundHandler {
        typealias OutboundIn = HTTPClientRequestPart
        typealias OutboundOut = ByteBuffer

        func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
            switch unwrapOutboundIn(data) {
            case .body(.byteBuffer(let bytes)): context.write(wrapOutboundOut(bytes), promise: promise)
            case .head, .end: promise?.succeed(())
            case .body(.fileRegion): promise?.fail(ChannelError.operationUnsupported)
            }
        }
    }
}
