import NIOCore
import OnTheMapShared
import PreparedHTTP

/// One open live stream, as the feed hands it what happens. Both are called on the event loop the
/// stream was subscribed on.
protocol LiveStream: AnyObject, Sendable {
    func deliver(_ message: LiveFeed.Message)
    /// The gateway is shutting down. Returns what completes once the stream has ended.
    func end() -> EventLoopFuture<Void>
}

/// The streams subscribed on one event loop, touched only on that loop: a change reaches all of them with
/// one hop to it, rather than one wake-up of a task per stream.
final class LoopStreams: @unchecked Sendable {
    let loop: any EventLoop
    private var streams: [UInt64: any LiveStream] = [:]

    init(loop: any EventLoop) { self.loop = loop }

    /// Runs `body` on the loop: at once when already there.
    func onLoop(_ body: @escaping @Sendable (LoopStreams) -> Void) {
        if loop.inEventLoop { body(self) } else { loop.execute { body(self) } }
    }

    func add(_ id: UInt64, _ stream: any LiveStream) {
        loop.assertInEventLoop()
        streams[id] = stream
    }

    func remove(_ id: UInt64) {
        loop.assertInEventLoop()
        streams[id] = nil
    }

    func deliver(_ message: LiveFeed.Message) {
        loop.assertInEventLoop()
        // A stream may leave while this goes (a client too slow is let go): the loop runs over a copy then.
        for stream in streams.values { stream.deliver(message) }
    }

    /// Ends every stream; completes once their connections have closed.
    func endAll() -> EventLoopFuture<Void> {
        loop.assertInEventLoop()
        return EventLoopFuture.andAllComplete(streams.values.map { $0.end() }, on: loop)
    }
}

/// A live stream (`EventsController.stream`): each change is one write of a chunk made once for every
/// stream; before the router, to its connection, with no task of its own waiting for it.
final class LiveStreamWriter: LiveStream, @unchecked Sendable {
    private let stream: PreparedStream
    /// The newest change sent: what the log gives while catching up and the feed gives again is sent once.
    private var last: LogPosition?
    /// What the feed hands over while the stream still reads what its client missed; nil once live.
    private var held: [LiveFeed.Message]?

    /// The most of the log a resumed stream is sent (`LIVE_RESUME_EVENTS`): a client further behind is
    /// told to reload instead, so no request makes the gateway and the database read the whole log.
    private let resumeWindow: Int

    init(_ stream: PreparedStream, resumingAfter position: LogPosition?, resumeWindow: Int) {
        self.stream = stream
        last = position
        held = position == nil ? nil : []
        self.resumeWindow = resumeWindow
    }

    /// Once the head is out: the opening frame, what the client missed (when it said what it had), then live.
    func start(locations: LocationsClient, requestID: String) {
        stream.write(LiveFrame.opening.chunk)
        if let last { catchUp(after: last, within: resumeWindow, locations: locations, requestID: requestID) }
    }

    func deliver(_ message: LiveFeed.Message) {
        guard held == nil else {
            held!.append(message)
            if held!.count > LiveFeed.backlogLimit { stream.abort() }
            return
        }
        send(message)
    }

    func end() -> EventLoopFuture<Void> {
        stream.finish()
        return stream.closeFuture
    }

    private func send(_ message: LiveFeed.Message) {
        switch message {
        case .heartbeat:
            if stream.isWritable { stream.write(LiveFrame.heartbeat.chunk) }
        case .change(let position, let frame):
            if let last, position <= last { return }
            // A client that reads slower than pins come would hold more and more of the gateway's memory.
            // Its connection is closed instead: it reconnects with the last id it got and reads the rest
            // from the log.
            guard stream.isWritable else { return stream.abort() }
            last = position
            stream.write(frame.chunk)
        }
    }

    /// Writes the log after `position` page by page, each once the one before has been sent, then what the
    /// feed handed over meanwhile; the first page is asked `within` the resume window, and a reset answer
    /// sends the client `reset` and follows on from the head. A page whose cursor did not move is the end
    /// (one whose events were all a hidden pin's lists none, and moves on). A log that cannot be read ends
    /// the stream: the client tries again.
    private func catchUp(after position: LogPosition, within window: Int? = nil, locations: LocationsClient, requestID: String) {
        guard stream.isOpen else { return }
        locations.changes(after: position, wait: 0, within: window, requestID: requestID, on: stream.eventLoop).whenComplete { result in
            guard case .success(let page) = result, let next = page.position else { return self.stream.abort() }
            if page.reset {
                self.last = next
                self.stream.write(PreparedStream.Chunk(SSEFrame.reset(cursor: next)))
                return self.catchUp(after: next, locations: locations, requestID: requestID)
            }
            guard next != position else { return self.goLive() }
            guard !page.events.isEmpty else { return self.catchUp(after: next, locations: locations, requestID: requestID) }
            let sent = self.stream.eventLoop.makePromise(of: Void.self)
            for (index, event) in page.events.enumerated() {
                if let position = LogPosition(event.id) { self.last = position }
                self.stream.write(PreparedStream.Chunk(SSEFrame.event(event)), promise: index == page.events.count - 1 ? sent : nil)
            }
            sent.futureResult.whenSuccess { self.catchUp(after: next, locations: locations, requestID: requestID) }
        }
    }

    private func goLive() {
        let waiting = held ?? []
        held = nil
        for message in waiting { send(message) }
    }
}
