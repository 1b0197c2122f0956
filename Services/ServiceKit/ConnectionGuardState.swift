/// When a connection has to go, decided from what happens on it: a value that takes events and returns
/// what to do, so it is tested without a socket (`ConnectionGuard` only performs its actions).
///
/// Time passes in ticks (`ConnectionLimits.tick`): counting them costs nothing per request, where reading
/// the clock on every read and write would cost a system call's worth each on the hottest path.
public struct ConnectionGuardState: Sendable, Equatable {
    public enum Phase: Sendable, Equatable {
        /// No request is being read (answers may still be on their way).
        case betweenRequests
        /// Bytes of a request head have arrived, but not all of it, for `ticks` ticks.
        case readingHead(ticks: Int)
        /// The head has arrived and the body is being read, for `ticks` ticks.
        case readingBody(ticks: Int)
    }

    public enum Reason: String, Sendable, Equatable {
        case headerTimeout = "request head not received in time"
        case bodyTimeout = "request body not received in time"
        case idle = "idle"
        case clientLeft = "client closed its side during a streamed answer"
    }

    public enum Action: Sendable, Equatable {
        case none
        case close(Reason)
    }

    public enum Part: Sendable, Equatable { case head, body, end }

    public private(set) var phase = Phase.betweenRequests
    /// Ticks in a row with nothing read or written.
    private var quietTicks = 0
    private var active = false
    /// Request parts the current socket read produced.
    private var partsThisRead = 0
    /// Answers of the router's whose head has been written and whose end has not (a live stream, say).
    private var streaming = 0
    private let headerTicks: Int
    private let bodyTicks: Int
    private let idleTicks: Int

    public init(limits: ConnectionLimits) {
        func ticks(_ duration: Duration) -> Int {
            max(1, Int((duration / limits.tick).rounded(.up)))
        }
        headerTicks = ticks(limits.headerTimeout)
        bodyTicks = ticks(limits.bodyTimeout)
        idleTicks = ticks(limits.idleTimeout)
    }

    /// The HTTP decoder produced a part of a request.
    public mutating func read(_ part: Part) {
        partsThisRead += 1
        switch part {
        case .head: phase = .readingBody(ticks: 0)
        case .body: break
        case .end: phase = .betweenRequests
        }
    }

    /// One read from the socket is over. Bytes that produced no part at all between requests are the start
    /// of a head the decoder is still waiting to complete.
    public mutating func readComplete() {
        active = true
        if partsThisRead == 0, phase == .betweenRequests { phase = .readingHead(ticks: 0) }
        partsThisRead = 0
    }

    public mutating func wroteHead() {
        active = true
        streaming += 1
    }

    public mutating func wroteBody() {
        active = true
    }

    public mutating func wroteEnd() {
        active = true
        streaming = max(0, streaming - 1)
    }

    /// The client shut its side. Between requests it may still be reading an answer, so that is left to
    /// finish; but a client that leaves while an answer streams to it is gone, and the stream with it.
    public mutating func inputClosed() -> Action {
        streaming > 0 ? .close(.clientLeft) : .none
    }

    public mutating func tick() -> Action {
        if active {
            quietTicks = 0
            active = false
        } else {
            quietTicks += 1
        }
        switch phase {
        case .betweenRequests:
            break
        case .readingHead(let ticks):
            if ticks + 1 >= headerTicks { return .close(.headerTimeout) }
            phase = .readingHead(ticks: ticks + 1)
        case .readingBody(let ticks):
            if ticks + 1 >= bodyTicks { return .close(.bodyTimeout) }
            phase = .readingBody(ticks: ticks + 1)
        }
        return quietTicks >= idleTicks ? .close(.idle) : .none
    }
}
