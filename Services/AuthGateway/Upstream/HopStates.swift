import HTTPTypes
import NIOCore
import NIOHTTP1
import PreparedHTTP

/// Why a request on the hop failed, but for the connection's own errors.
enum HopFailure: Error, Equatable {
    case timedOut
    case connectionClosed
    case answerTooLarge
    /// Every connection busy and too many requests already waiting.
    case overloaded
}

/// The connections of one event loop's pool to locations-service and the requests waiting for one, as a
/// value: each event returns what to do, and `InternalHTTPClient` does it. The time of each event is
/// given, so it is tested without sockets or waiting.
struct HopPoolState<Connection: Hashable, Request> {
    struct Limits {
        /// Connections open (or being opened) at once; a request that finds them all busy waits its turn.
        var maximumConnections: Int
        /// Requests waiting for a connection; past that a burst is refused at once.
        var maximumWaiting: Int
        /// How long a kept-alive connection may wait for its next request before it is closed instead.
        var idleLifetime: TimeAmount
    }

    enum Next {
        case none
        case start(Request, on: Connection)
        /// Open a connection for the request (it is counted open from now).
        case connect(Request)
        /// Every connection busy, and too many requests already waiting.
        case refuse(Request)
    }

    /// What to do: connections to close and requests whose time ran out while they waited, then `next`.
    struct Action {
        var close: [Connection] = []
        var expired: [Request] = []
        var next = Next.none
    }

    let limits: Limits
    /// Kept-alive connections and when each fell idle, the most recent last.
    private var idle: [(connection: Connection, since: NIODeadline)] = []
    private var waiting = CircularBuffer<(request: Request, deadline: NIODeadline)>()
    /// Connections opened or being opened, and not yet closed.
    private(set) var open = 0

    init(limits: Limits) { self.limits = limits }

    /// A request to send, whose time is up at `deadline`.
    mutating func send(_ request: Request, deadline: NIODeadline, now: NIODeadline) -> Action {
        var action = Action()
        // The service closes a connection idle for 60 s; one idle for half that is closed here first, so a
        // request is never sent on a connection the service is closing at that very moment.
        while let (connection, since) = idle.popLast() {
            if since + limits.idleLifetime > now {
                action.next = .start(request, on: connection)
                return action
            }
            action.close.append(connection)
        }
        if open < limits.maximumConnections {
            open += 1
            action.next = .connect(request)
        } else if waiting.count < limits.maximumWaiting {
            waiting.append((request, deadline))
        } else {
            action.next = .refuse(request)
        }
        return action
    }

    /// A connection whose exchange ended cleanly is ready for the next request.
    mutating func released(_ connection: Connection, now: NIODeadline) -> Action {
        var action = Action()
        if let request = nextWaiting(now: now, expired: &action.expired) {
            action.next = .start(request, on: connection)
        } else {
            idle.append((connection, now))
        }
        return action
    }

    /// A connection ended, or could not be opened (nil): a waiting request may open another in its place.
    mutating func closed(_ connection: Connection?, now: NIODeadline) -> Action {
        var action = Action()
        open -= 1
        if let connection { idle.removeAll { $0.connection == connection } }
        if open < limits.maximumConnections, let request = nextWaiting(now: now, expired: &action.expired) {
            open += 1
            action.next = .connect(request)
        }
        return action
    }

    /// Every idle connection, to be closed; later requests open new ones.
    mutating func takeIdle() -> [Connection] {
        defer { idle = [] }
        return idle.map(\.connection)
    }

    /// The oldest waiting request whose time is not up; those whose time is up are added to `expired`.
    private mutating func nextWaiting(now: NIODeadline, expired: inout [Request]) -> Request? {
        while let (request, deadline) = waiting.popFirst() {
            if deadline > now { return request }
            expired.append(request)
        }
        return nil
    }
}

/// One connection's exchange with the service, as a value: a request goes out, its answer comes in
/// parts, and the connection is kept for the next request or closed. `InternalHTTPClient` feeds it what
/// the channel reads and does what it returns.
struct HopExchangeState<Request> {
    private enum State {
        case idle
        case waiting(Request, keepAlive: Bool)
        case reading(Request, keepAlive: Bool, head: HTTPResponseHead, body: ByteBuffer)
        case closed
    }

    enum Action {
        case none
        /// Write the request, and time it.
        case send(Request)
        /// The exchange is over: answer the request, then give the connection back to the pool or close it.
        case finish(Request, Result<HopAnswer, any Error>, reuse: Bool)
        /// Close the connection (an answer nobody asked for: it cannot be trusted any more).
        case close
    }

    private var state = State.idle
    let maximumAnswer: Int

    init(maximumAnswer: Int) { self.maximumAnswer = maximumAnswer }

    /// Sends `request`; `keepAlive` when it leaves the connection open for the next one.
    mutating func start(_ request: Request, keepAlive: Bool) -> Action {
        guard case .idle = state else { return .finish(request, .failure(HopFailure.connectionClosed), reuse: false) }
        state = .waiting(request, keepAlive: keepAlive)
        return .send(request)
    }

    mutating func read(_ part: HTTPClientResponsePart) -> Action {
        switch (state, part) {
        case (.waiting(let request, let keepAlive), .head(let head)):
            state = .reading(request, keepAlive: keepAlive, head: head, body: ByteBuffer())
            return .none
        case (.reading(let request, let keepAlive, let head, var body), .body(var part)):
            guard body.readableBytes + part.readableBytes <= maximumAnswer else { return fail(HopFailure.answerTooLarge) }
            // The state lets go of the body while it grows, so the buffer is written in place.
            state = .idle
            body.writeBuffer(&part)
            state = .reading(request, keepAlive: keepAlive, head: head, body: body)
            return .none
        case (.reading(let request, let keepAlive, let head, let body), .end):
            state = .idle
            let answer = HopAnswer(status: Int(head.status.code), headers: ParsedHeaders(head.headers), body: body)
            return .finish(request, .success(answer), reuse: keepAlive && head.isKeepAlive)
        case (.waiting, _), (.reading, _):
            return fail(HopFailure.connectionClosed)
        case (.idle, _), (.closed, _):
            state = .closed
            return .close
        }
    }

    /// The request's time is up, the connection ended, or it failed: the request, if one is out, fails
    /// with `error`, and the connection is not used again.
    mutating func fail(_ error: any Error) -> Action {
        defer { state = .closed }
        switch state {
        case .waiting(let request, _), .reading(let request, _, _, _): return .finish(request, .failure(error), reuse: false)
        case .idle, .closed: return .none
        }
    }
}
