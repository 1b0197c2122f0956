import Logging
import NIOCore
import NIOHTTP1
import PreparedHTTP
import Synchronization

/// Open connections per client address, shared by all of a server's connections.
public final class ConnectionsPerAddress: Sendable {
    private let counts = Mutex<[String: Int]>([:])
    public let limit: Int

    public init(limit: Int) { self.limit = limit }

    /// Counts one more connection from `address`, unless it already has `limit` open.
    func open(_ address: String) -> Bool {
        counts.withLock { counts in
            let count = counts[address, default: 0]
            guard count < limit else { return false }
            counts[address] = count + 1
            return true
        }
    }

    func close(_ address: String) {
        counts.withLock { counts in
            let count = counts[address, default: 1] - 1
            counts[address] = count > 0 ? count : nil
        }
    }

    public func count(_ address: String) -> Int { counts.withLock { $0[address, default: 0] } }
}

/// One connection's place in the counts, whatever its protocol: among all open connections (`/metrics`,
/// `MemoryReturn`), and among its client address's (but a trusted proxy's, which speaks for many clients).
struct CountedConnection {
    private let perAddress: ConnectionsPerAddress
    private let trustedProxies: TrustedProxies
    /// The address this connection is counted under, once counted.
    private var address: String?
    /// Counted among the open connections (and its address's, unless refused), until `stop()`.
    private(set) var started = false

    init(perAddress: ConnectionsPerAddress, trustedProxies: TrustedProxies) {
        self.perAddress = perAddress
        self.trustedProxies = trustedProxies
    }

    var limit: Int { perAddress.limit }

    /// Counts the connection from `remote`, once. Answers whether it is refused: its address already has as
    /// many connections open as it may (the refusal is then counted and logged, and the connection counted
    /// among the open ones only).
    mutating func start(remote: SocketAddress?, logger: Logger) -> Bool {
        guard !started else { return false }
        started = true
        OperatorMetrics.connectionOpened()
        MemoryReturn.connections.opened()
        guard let remote = remote?.ipAddress, !trustedProxies.contains(remote) else { return false }
        guard perAddress.open(remote) else {
            OperatorMetrics.refused("tooManyConnections")
            logger.notice("connection refused: too many from one address", metadata: ["address": "\(remote)", "limit": "\(limit)"])
            return true
        }
        address = remote
        return false
    }

    /// The connection has ended: it leaves the counts, once.
    mutating func stop() {
        guard started else { return }
        started = false
        OperatorMetrics.connectionClosed()
        MemoryReturn.connections.closed()
        if let address { perAddress.close(address) }
        address = nil
    }
}

/// Sits right after the HTTP parser, before anything answers: refuses a connection past its address's
/// limit, and closes one whose client is too slow, idle, or gone, as `ConnectionGuardState` decides. It
/// holds the one wake-up the state asks for. The `PreparedResponseHandler` right after it tells it of each
/// part read and each part of the router's answers written (`RequestPartWatcher`). Its clock is concrete,
/// so the state's code is specialised for it: generic over the clock, every read would look up the state's
/// generic metadata.
final class ConnectionGuard: ChannelDuplexHandler, RemovableChannelHandler, RequestPartWatcher {
    typealias State = ConnectionGuardState<ContinuousClock>
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    private var state: State
    private let clock = ContinuousClock()
    private var counted: CountedConnection
    private let logger: Logger
    /// Refused: what the client sends is dropped, and the connection closes once it has read the refusal.
    private var refused = false
    private var wake: Scheduled<Void>?

    init(limits: ConnectionLimits, perAddress: ConnectionsPerAddress, logger: Logger) {
        state = State(limits: limits, clock: clock)
        counted = CountedConnection(perAddress: perAddress, trustedProxies: limits.trustedProxies)
        self.logger = logger
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { start(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        start(context: context)
        context.fireChannelActive()
    }

    private func start(context: ChannelHandlerContext) {
        guard !counted.started else { return }
        let refused = counted.start(remote: context.channel.remoteAddress, logger: logger)
        perform(state.start(), context: context)
        if refused { refuse(context: context) }
    }

    /// A 429 that says why, then the end of the connection. Written at once: the client reads it as the
    /// answer to the request it is about to send.
    private func refuse(context: ChannelHandlerContext) {
        refused = true
        let body = #"{"status":429,"error":"Too many open connections from your address (at most \#(counted.limit)); close some and try again."}"#
        var head = HTTPResponseHead(version: .http1_1, status: .tooManyRequests)
        head.headers.add(name: "Content-Type", value: "application/json; charset=utf-8")
        head.headers.add(name: "Content-Length", value: String(body.utf8.count))
        head.headers.add(name: "Retry-After", value: "10")
        head.headers.add(name: "Connection", value: "close")
        head.headers.add(name: AnswerHeaders.noSniff.name, value: AnswerHeaders.noSniff.value)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: body)))), promise: nil)
        // Our side ends here; the whole connection once the client has read the answer and closed its
        // side, or a second later (closing at once could reset the answer away before it is read).
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in loopBound.value.close(mode: .output, promise: nil) }
        wake?.cancel()
        wake = context.eventLoop.scheduleTask(in: .seconds(1)) { loopBound.value.close(promise: nil) }
    }

    func channelInactive(context: ChannelHandlerContext) {
        stop()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        stop()
    }

    private func stop() {
        guard counted.started else { return }
        wake?.cancel()
        wake = nil
        counted.stop()
    }

    /// What a refused connection sends is dropped; the rest passes on as it came (the handler after this one
    /// tells of each part, `read(_:)`).
    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !refused else { return }
        context.fireChannelRead(data)
    }

    func read(_ part: HTTPServerRequestPart) {
        state.read(State.Part(part))
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if !refused { perform(state.readComplete(), context: context) }
        context.fireChannelReadComplete()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, event == .inputClosed {
            if refused {
                context.close(promise: nil)
                return
            }
            perform(state.inputClosed(), context: context)
        }
        context.fireUserInboundEventTriggered(event)
    }

    func wrote(_ part: HTTPServerResponsePart) {
        state.wrote(State.Part(part))
    }

    /// A stream has opened: it is written for as long as its client stays, and reads nothing more, so none
    /// of the timeouts applies (a client too slow or gone is the stream's to find). Its connection stays
    /// counted.
    func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
        guard event is PreparedStreamOpened else { return context.triggerUserOutboundEvent(event, promise: promise) }
        state.streamOpened()
        wake?.cancel()
        wake = nil
        promise?.succeed()
    }

    private func perform(_ action: State.Action, context: ChannelHandlerContext) {
        switch action {
        case .none:
            break
        case .wake(let deadline):
            wake?.cancel()
            let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            wake = context.eventLoop.scheduleTask(in: TimeAmount(clock.now.duration(to: deadline))) {
                let (handler, context) = loopBound.value
                handler.perform(handler.state.wakeUp(), context: context)
            }
        case .close(let reason):
            OperatorMetrics.closedConnection("\(reason)")
            logger.debug(
                "connection closed", metadata: ["reason": "\(reason.rawValue)", "peer": "\(context.channel.remoteAddress?.description ?? "-")"])
            stop()
            context.close(promise: nil)
        }
    }
}

extension ConnectionGuardState.Part {
    /// Which part of a request or an answer it is, whatever it carries.
    init<Head, Body>(_ part: HTTPPart<Head, Body>) {
        switch part {
        case .head: self = .head
        case .body: self = .body
        case .end: self = .end
        }
    }
}
