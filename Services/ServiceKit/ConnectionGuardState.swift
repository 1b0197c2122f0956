/// When a connection has to go, decided from what happens on it and when: a value that takes events and
/// returns what to do, so it is tested without a socket and without waiting (`ConnectionGuard` performs
/// its actions, and a test moves a `ManualClock`).
///
/// As in Hummingbird's `HTTPConnectionStateHandler`, the connection holds one wake-up at a time. Activity
/// moves the idle deadline later without touching it; when it comes, it either finds a deadline passed or
/// asks for the next one. Only a deadline earlier than the one it holds (a head or body that is slow to
/// arrive) asks for it to be moved.
public struct ConnectionGuardState<C: Clock>: Sendable where C.Duration == Duration {
    public enum Phase: Sendable, Equatable {
        /// No request is being read (answers may still be on their way).
        case betweenRequests
        /// Bytes of a request head have arrived since then, but not all of it.
        case readingHead(since: C.Instant)
        /// The head arrived then, and the body is being read.
        case readingBody(since: C.Instant)
    }

    public enum Reason: String, Sendable, Equatable {
        case headerTimeout = "request head not received in time"
        case bodyTimeout = "request body not received in time"
        case idle = "idle"
        case clientLeft = "client closed its side during a streamed answer"
    }

    public enum Action: Sendable, Equatable {
        case none
        /// Hold a wake-up for this instant (in place of any held before) and call `wakeUp()` then.
        case wake(at: C.Instant)
        case close(Reason)
    }

    public enum Part: Sendable, Equatable { case head, body, end }

    public private(set) var phase = Phase.betweenRequests
    /// When something was last read or written.
    private var lastActive: C.Instant
    /// The wake-up the connection holds; nil once a stream has opened (nothing then times it).
    private var wake: C.Instant?
    private var watching = true
    /// Request parts the current socket read produced.
    private var partsThisRead = 0
    /// Answers whose head has been written and whose end has not (a live stream, say).
    private var streaming = 0
    private let limits: ConnectionLimits
    private let clock: C

    public init(limits: ConnectionLimits, clock: C) {
        self.limits = limits
        self.clock = clock
        lastActive = clock.now
    }

    /// The connection is open: it may stay idle this long.
    public mutating func start() -> Action {
        lastActive = clock.now
        return hold(lastActive.advanced(by: limits.idleTimeout))
    }

    /// The HTTP decoder produced a part of a request.
    public mutating func read(_ part: Part) {
        partsThisRead += 1
        switch part {
        case .head: phase = .readingBody(since: clock.now)
        case .body: break
        case .end: phase = .betweenRequests
        }
    }

    /// One read from the socket is over. Bytes that produced no part at all between requests are the start
    /// of a head the decoder is still waiting to complete.
    public mutating func readComplete() -> Action {
        lastActive = clock.now
        if partsThisRead == 0, phase == .betweenRequests { phase = .readingHead(since: lastActive) }
        partsThisRead = 0
        guard let (deadline, _) = phaseDeadline else { return .none }
        return hold(deadline)
    }

    public mutating func wrote(_ part: Part) {
        lastActive = clock.now
        switch part {
        case .head: streaming += 1
        case .body: break
        case .end: streaming = max(0, streaming - 1)
        }
    }

    /// The connection has become a stream: it is written for as long as its client stays and reads
    /// nothing more, so no timeout applies (a client too slow or gone is the stream's to find).
    public mutating func streamOpened() {
        watching = false
        wake = nil
    }

    /// The client shut its side. Between requests it may still be reading an answer, so that is left to
    /// finish; but a client that leaves while an answer streams to it is gone, and the stream with it.
    public func inputClosed() -> Action {
        streaming > 0 ? .close(.clientLeft) : .none
    }

    /// The wake-up the connection held has come.
    public mutating func wakeUp() -> Action {
        wake = nil
        guard watching else { return .none }
        var (deadline, reason) = (lastActive.advanced(by: limits.idleTimeout), Reason.idle)
        if let (phaseDeadline, phaseReason) = self.phaseDeadline, phaseDeadline < deadline { (deadline, reason) = (phaseDeadline, phaseReason) }
        return clock.now >= deadline ? .close(reason) : hold(deadline)
    }

    /// The deadline of the head or body being read, if one is.
    private var phaseDeadline: (C.Instant, Reason)? {
        switch phase {
        case .betweenRequests: nil
        case .readingHead(let since): (since.advanced(by: limits.headerTimeout), .headerTimeout)
        case .readingBody(let since): (since.advanced(by: limits.bodyTimeout), .bodyTimeout)
        }
    }

    /// Asks for a wake-up at `deadline` unless one as early is held already.
    private mutating func hold(_ deadline: C.Instant) -> Action {
        guard watching else { return .none }
        if let wake, wake <= deadline { return .none }
        wake = deadline
        return .wake(at: deadline)
    }
}
