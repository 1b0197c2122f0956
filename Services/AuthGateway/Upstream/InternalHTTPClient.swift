import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// Keep-alive HTTP/1.1 to locations-service, the gateway's own hop, with connections pooled per event
/// loop: a request forwarded from a client connection's event loop is sent, answered and passed back on
/// that same loop, without a thread switch on the way.
///
/// AsyncHTTPClient was tried for this hop on the calling event loop (its future-based `execute(request:
/// delegate:eventLoop: .delegateAndChannel(on:), deadline:)` with a `ResponseAccumulator`), in the gateway
/// POST rounds of bench/run.py (3 rounds each, same build, 2 cores): it cost the gateway 253–269 µs of CPU
/// per POST against 84–92 µs here, and the gateway's POST fell to 0.32–0.37× locations-service's own
/// against 0.63–0.74× here (the goal is 0.7×). AsyncHTTPClient still speaks to the outside services
/// (Udacity, a geocoder), which need TLS and redirects; this hop needs neither.
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

    enum Failure: Error, Equatable {
        case timedOut
        case connectionClosed
        case answerTooLarge
        /// Every connection busy and too many requests already waiting.
        case overloaded
    }

    var endpoint: Endpoint { settings.endpoint }
    private let group: any EventLoopGroup
    private let settings: Settings
    private let pools = Mutex<[ObjectIdentifier: LoopPool]>([:])

    /// What each event loop's pool needs to know of the client: a copy, since connections may still close
    /// after the client is gone.
    fileprivate struct Settings: Sendable {
        let endpoint: Endpoint
        let connectTimeout: TimeAmount
        /// The longest answer read; the service's largest is a list of 1,000 pins.
        let maximumAnswer: Int
        /// Connections open at once per event loop; a request that finds them all busy waits its turn. The
        /// bound keeps a burst of clients from opening a connection each to the service (which caps the
        /// connections one address may hold): 32 in flight per core already keep its PostgreSQL pool busy.
        let maximumConnections: Int
        /// Requests waiting per event loop for a connection; past that a burst is refused at once.
        let maximumWaiting: Int
        /// How long a kept-alive connection may wait for its next request: well inside the service's idle
        /// timeout (`ConnectionLimits.idleTimeout`, 60 s).
        let idleLifetime: TimeAmount
        /// The time the idle lifetime is counted in; a test moves its own.
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
            maximumConnections: maximumConnections, maximumWaiting: maximumWaiting, idleLifetime: idleLifetime, now: now)
    }

    /// Sends one request on `eventLoop` (any of the group's when nil) and reads the whole answer. It fails
    /// when the service cannot be reached, closes the connection first, or has not answered in `timeout`.
    func execute(
        method: HTTPMethod, target: String, headers: HTTPHeaders, body: ByteBuffer?,
        timeout: TimeAmount, on eventLoop: (any EventLoop)? = nil
    ) -> EventLoopFuture<Answer> {
        let loop = eventLoop ?? group.next()
        guard loop.inEventLoop else {
            return loop.flatSubmit { self.execute(method: method, target: target, headers: headers, body: body, timeout: timeout, on: loop) }
        }
        var head = HTTPRequestHead(version: .http1_1, method: method, uri: endpoint.basePath + target, headers: headers)
        head.headers.replaceOrAdd(name: "Host", value: endpoint.hostHeader)
        if let body { head.headers.replaceOrAdd(name: "Content-Length", value: String(body.readableBytes)) }
        let exchange = Exchange(head: head, body: body, promise: loop.makePromise(), deadline: .now() + timeout)
        pool(for: loop).send(exchange)
        return exchange.promise.futureResult
    }

    /// Connections open (or being opened) in `loop`'s pool: one the service closed counts until the pool
    /// has seen it close.
    func openConnections(on loop: any EventLoop) -> EventLoopFuture<Int> {
        loop.submit { self.pool(for: loop).open }
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
        let head: HTTPRequestHead
        let body: ByteBuffer?
        let promise: EventLoopPromise<Answer>
        let deadline: NIODeadline
    }

    /// The connections of one event loop, and the requests waiting for one. Touched only on that loop.
    fileprivate final class LoopPool: @unchecked Sendable {
        let loop: any EventLoop
        let settings: Settings
        /// Kept-alive connections and when each fell idle, the most recent last.
        private var idle: [(connection: ExchangeHandler, since: NIODeadline)] = []
        private var waiting = CircularBuffer<Exchange>()
        /// Connections opened or being opened, and not yet closed.
        private(set) var open = 0

        init(loop: any EventLoop, settings: Settings) {
            self.loop = loop
            self.settings = settings
        }

        func send(_ exchange: Exchange) {
            loop.preconditionInEventLoop()
            // The service closes a connection idle for 60 s; one idle for half that is closed here first, so
            // a request is never sent on a connection the service is closing at that very moment.
            let fresh = settings.now() - settings.idleLifetime
            while let (connection, since) = idle.popLast() {
                if since > fresh, connection.isUsable {
                    connection.start(exchange)
                    return
                }
                connection.close()
            }
            if open < settings.maximumConnections {
                connect(for: exchange)
            } else if waiting.count < settings.maximumWaiting {
                waiting.append(exchange)
            } else {
                exchange.promise.fail(Failure.overloaded)
            }
        }

        private func connect(for exchange: Exchange) {
            open += 1
            ClientBootstrap(group: loop)
                .connectTimeout(settings.connectTimeout)
                .channelOption(.tcpOption(.tcp_nodelay), value: 1)
                .channelInitializer { [settings] channel in
                    channel.eventLoop.makeCompletedFuture {
                        // The headers sent are the client's, already checked by the server's parser, and our own.
                        try channel.pipeline.syncOperations.addHTTPClientHandlers(enableOutboundHeaderValidation: false)
                        try channel.pipeline.syncOperations.addHandler(ExchangeHandler(pool: self, maximumAnswer: settings.maximumAnswer))
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
                        self.closed()
                    }
                }
        }

        /// The oldest waiting request whose time is not up; those whose time is up are told so.
        private func nextWaiting() -> Exchange? {
            while let exchange = waiting.popFirst() {
                if exchange.deadline > .now() { return exchange }
                exchange.promise.fail(Failure.timedOut)
            }
            return nil
        }

        /// A connection whose exchange ended cleanly, ready for the next request.
        func giveBack(_ connection: ExchangeHandler) {
            if let next = nextWaiting() {
                connection.start(next)
            } else {
                idle.append((connection, settings.now()))
            }
        }

        /// A connection ended: a waiting request may open another in its place.
        func closed() {
            open -= 1
            if open < settings.maximumConnections, let next = nextWaiting() { connect(for: next) }
        }

        func closeIdle() {
            let connections = idle
            idle = []
            for idle in connections { idle.connection.close() }
        }
    }

    /// One connection: writes a request, collects its answer, and fails the request when the connection
    /// ends or the time is up first.
    fileprivate final class ExchangeHandler: ChannelInboundHandler {
        typealias InboundIn = HTTPClientResponsePart
        typealias OutboundOut = HTTPClientRequestPart

        private let pool: LoopPool
        private let maximumAnswer: Int
        private var context: ChannelHandlerContext?
        private var current: Exchange?
        private var timeout: Scheduled<Void>?
        private var answerHead: HTTPResponseHead?
        private var answerBody: ByteBuffer?

        init(pool: LoopPool, maximumAnswer: Int) {
            self.pool = pool
            self.maximumAnswer = maximumAnswer
        }

        var isUsable: Bool { context?.channel.isActive == true && current == nil }

        func handlerAdded(context: ChannelHandlerContext) { self.context = context }

        func start(_ exchange: Exchange) {
            guard let context, context.channel.isActive else {
                exchange.promise.fail(Failure.connectionClosed)
                return
            }
            current = exchange
            answerHead = nil
            answerBody = nil
            let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
            timeout = context.eventLoop.scheduleTask(deadline: exchange.deadline) {
                handler.value.finish(.failure(Failure.timedOut), reusable: false)
            }
            context.write(wrapOutboundOut(.head(exchange.head)), promise: nil)
            if let body = exchange.body { context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil) }
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            guard current != nil else {
                // An answer nobody asked for: the connection cannot be trusted any more.
                context.close(promise: nil)
                return
            }
            switch unwrapInboundIn(data) {
            case .head(let head):
                answerHead = head
            case .body(var part):
                guard (answerBody?.readableBytes ?? 0) + part.readableBytes <= maximumAnswer else {
                    finish(.failure(Failure.answerTooLarge), reusable: false)
                    return
                }
                if answerBody == nil { answerBody = part } else { answerBody!.writeBuffer(&part) }
            case .end:
                guard let head = answerHead else {
                    finish(.failure(Failure.connectionClosed), reusable: false)
                    return
                }
                let answer = Answer(status: Int(head.status.code), headers: head.headers, body: answerBody ?? ByteBuffer())
                finish(.success(answer), reusable: head.isKeepAlive)
            }
        }

        func channelInactive(context: ChannelHandlerContext) {
            finish(.failure(Failure.connectionClosed), reusable: false)
            pool.closed()
            context.fireChannelInactive()
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            finish(.failure(error), reusable: false)
        }

        func close() { context?.close(promise: nil) }

        private func finish(_ result: Result<Answer, any Error>, reusable: Bool) {
            guard let exchange = current else { return }
            current = nil
            timeout?.cancel()
            timeout = nil
            answerHead = nil
            answerBody = nil
            if reusable, exchange.head.isKeepAlive {
                pool.giveBack(self)
            } else {
                close()
            }
            exchange.promise.completeWith(result)
        }
    }
}
