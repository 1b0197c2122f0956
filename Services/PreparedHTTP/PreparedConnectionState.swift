import NIOCore
import NIOHTTP1

/// What one connection's `PreparedResponseHandler` does with each request part and each event, decided
/// here without a channel: the handler only performs the actions, so every order of events can be tried
/// on this value alone.
///
/// A request the `prepared` closure takes is answered by the handler; every other request goes to the
/// router. Answers never overtake each other: while the router owes an answer, every request goes to
/// the router too, and while the handler works out an answer, what arrives meanwhile is held back.
struct PreparedConnectionState {
    enum Action: Equatable {
        /// Pass this part on to the router.
        case route(HTTPServerRequestPart)
        /// Tell the client to send the body it announced (`100 Continue`), then pass this head on to the router.
        case continueAndRoute(HTTPServerRequestPart)
        /// Nothing to do (yet).
        case none
        /// The request is the handler's to answer, under this route name (for its metrics), once its end arrives.
        case take(route: String)
        /// Write this answer, then call `answerWritten()`.
        case answer(PreparedResponse)
        /// Work the answer out from the body (nil when it went past the limit), write it, then call `answerWritten()`.
        case respond(PreparedDeferral, body: ByteBuffer?)
        /// Open the stream; if it is refused, write the refusal and call `answerWritten()`.
        case open(PreparedStreamOpening)
    }

    /// After one of the handler's answers is written.
    enum AfterAnswer: Equatable {
        /// Go on: take the held parts (`nextHeld()`), then read again if a read was put off (`resumeReading()`).
        case goOn
        /// The server asked connections to wind down while the answer was owed: pass that on now (the
        /// handlers after this one close the connection), and read nothing more.
        case passShutdownOn
    }

    /// What is done with the request being read.
    private enum Reading {
        /// Passed to the router, part by part.
        case routing
        /// Answered from memory once its end arrives.
        case answering(PreparedResponse)
        /// Its body collected for `deferral` (nil once past the limit).
        case collecting(PreparedDeferral, body: ByteBuffer?)
        /// A stream, opened once the request has ended (a body it may have is dropped).
        case opening(PreparedStreamOpening)
        /// Read; its answer is being written or worked out, or is a stream that lasts as long as the
        /// connection. What arrives meanwhile (a pipelined request) is held back, and once some is, no
        /// more is read until the answer has been written.
        case awaiting
    }

    private let prepared: PreparedAnswer
    private var reading = Reading.routing
    /// Requests handed to the router whose response has not ended, oldest first: whether each asked for
    /// the head alone (HEAD). While there are any, every request goes to the router too: answering it here
    /// would overtake their responses on a pipelined connection.
    private var routed = CircularBuffer<Bool>()
    private var held = CircularBuffer<HTTPServerRequestPart>()
    private var readPending = false
    private var shutdownPending = false
    /// The connection's peer, as the requests read from it name it.
    var peer: SocketAddress?

    init(prepared: @escaping PreparedAnswer) {
        self.prepared = prepared
    }

    mutating func receive(_ part: HTTPServerRequestPart) -> Action {
        switch (part, reading) {
        case (_, .awaiting):
            held.append(part)
            return .none
        case (.head(var head), _):
            if let (taken, route) = take(head) {
                reading = taken
                return .take(route: route)
            }
            routed.append(head.method == .HEAD)
            // The router closes a connection after its answer only when the request says `Connection:
            // close`; an HTTP/1.0 request means the same by saying nothing.
            if !head.isKeepAlive, !head.headers[canonicalForm: "Connection"].contains(where: { $0.lowercased() == "close" }) {
                head.headers.add(name: "Connection", value: "close")
            }
            // The router sends no `100 Continue`, and a client that announced its body waits for one before
            // sending it (curl for a second). It is sent here, unless an earlier answer is still owed: the
            // interim answer would overtake it.
            if routed.count == 1, head.version == .http1_1,
                head.headers[canonicalForm: "Expect"].contains(where: { $0.lowercased() == "100-continue" })
            {
                return .continueAndRoute(.head(head))
            }
            return .route(.head(head))
        case (.body, .routing), (.end, .routing):
            return .route(part)
        case (.body, .answering), (.body, .opening):
            return .none
        case (.body(var chunk), .collecting(let deferral, let collected)):
            // Let go of the state's copy first, so that the body grows in place.
            reading = .routing
            var body: ByteBuffer?
            if var grown = consume collected, grown.readableBytes + chunk.readableBytes <= deferral.bodyLimit {
                grown.writeBuffer(&chunk)
                body = grown
            }
            reading = .collecting(deferral, body: body)
            return .none
        case (.end, .answering(let answer)):
            reading = .awaiting
            return .answer(answer)
        case (.end, .collecting(let deferral, let body)):
            reading = .awaiting
            return .respond(deferral, body: body)
        case (.end, .opening(let opening)):
            reading = .awaiting
            return .open(opening)
        }
    }

    /// Whether the handler answers a request, from its head. HTTP/1.0, a connection that ends after this
    /// response, and a body announced with `Expect` are left to the router.
    private func take(_ head: HTTPRequestHead) -> (Reading, route: String)? {
        guard routed.isEmpty, head.version == .http1_1, head.isKeepAlive, !head.headers.contains(name: "Expect") else { return nil }
        let request = PreparedRequest(head, peer: peer)
        guard let (handling, route) = prepared(request) else { return nil }
        switch handling {
        case .answer(let answer): return (.answering(answer), route)
        case .deferred(let deferral): return (.collecting(deferral, body: ByteBuffer()), route)
        case .stream(let opening): return (.opening(opening), route)
        }
    }

    mutating func answerWritten() -> AfterAnswer {
        reading = .routing
        guard shutdownPending else { return .goOn }
        shutdownPending = false
        held.removeAll()
        return .passShutdownOn
    }

    /// The next part held back while an answer was owed, unless another answer is owed by now.
    mutating func nextHeld() -> HTTPServerRequestPart? {
        guard !isAwaiting else { return nil }
        return held.popFirst()
    }

    /// Whether to read now a read that was put off (once, after the held parts are taken).
    mutating func resumeReading() -> Bool {
        guard !isAwaiting, readPending else { return false }
        readPending = false
        return true
    }

    /// Whether a read the channel asks for goes ahead now. Reading stops only once a pipelined request is
    /// actually held back: pausing and resuming for every deferred answer would cost two `epoll_ctl` calls
    /// each, for clients that send one request at a time.
    mutating func readRequested() -> Bool {
        guard isAwaiting, !held.isEmpty else { return true }
        readPending = true
        return false
    }

    /// Whether the server's request to wind down passes on now; while an answer of the handler's is owed it
    /// waits for `answerWritten()`, so the request is finished first.
    mutating func shutdownRequested() -> Bool {
        if case .routing = reading { return true }
        shutdownPending = true
        return false
    }

    /// Whether the router's answer being written (its oldest owed) answers a HEAD: it goes out with its head alone.
    var routedAnswerIsHeadOnly: Bool { routed.first ?? false }

    /// The router finished one of its answers.
    mutating func routedAnswerEnded() {
        _ = routed.popFirst()
    }

    private var isAwaiting: Bool {
        if case .awaiting = reading { return true }
        return false
    }
}
