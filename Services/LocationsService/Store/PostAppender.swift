import OnTheMapShared
import ServiceKit
import ServiceLifecycle
import Synchronization
import Tracing

/// Group commit for new pins: posts that arrive while earlier ones are being written wait and go
/// together, as one statement and one commit, instead of one transaction each.
///
/// At most `concurrentStatements` batches are in flight; a post that finds a free slot is written at
/// once, so a lone post waits for nothing. Two slots: one batch can execute while the other waits for its
/// WAL flush, and whatever arrives meanwhile queues for the next batch. More slots make smaller batches
/// under load, and every commit costs PostgreSQL and this service CPU that posts then lack.
///
/// Every post is answered only after its own batch committed, so nothing acknowledged can be lost. A
/// batch fails as a whole when any one of its posts clashes with the log (a reused idempotency key); its
/// posts are then written one by one, so each gets its own answer and none fails for another's sake.
/// A batch the database fails to take (an outage) fails the posts queued behind it too.
/// The writers are tasks of the service's `run()`, owned by the service group: `concurrentStatements` of
/// them take batches from one queue (a queue, not an `AsyncStream`, because a writer takes everything
/// waiting at once). On shutdown they write what is queued and end; a post that arrives after that is
/// refused as `ServiceStopping`, never left waiting.
final class PostAppender: Service, Sendable {
    typealias Post = (location: StudentLocation, metadata: EventMetadata)

    private struct Waiting {
        let post: Post
        let continuation: CheckedContinuation<LogPosition, any Error>
        /// The posting request's trace, when traces are on.
        let context: ServiceContext?
    }

    private typealias Writer = CheckedContinuation<[Waiting]?, Never>

    private struct State {
        var queue: [Waiting] = []
        /// Writers with nothing to write, each waiting for the next batch (nil: stop).
        var idle: [Writer] = []
        var stopping = false
    }

    private let events: EventStore
    private let concurrentStatements: Int
    private let maximumBatch: Int
    private let state = Mutex(State())

    init(events: EventStore, concurrentStatements: Int = 2, maximumBatch: Int = 64) {
        self.events = events
        self.concurrentStatements = concurrentStatements
        self.maximumBatch = maximumBatch
    }

    /// Posts waiting for a writer.
    var queuedCount: Int { state.withLock { $0.queue.count } }

    func append(_ location: StudentLocation, metadata: EventMetadata) async throws -> LogPosition {
        let context = ServiceContext.current
        let traced = RequestTracing.traces(context) ? context : nil
        return try await withCheckedThrowingContinuation { continuation in
            let waiting = Waiting(post: (location, metadata), continuation: continuation, context: traced)
            let handOver = state.withLock { state -> HandOver in
                guard !state.stopping else { return .refused }
                state.queue.append(waiting)
                guard let writer = state.idle.popLast() else { return .queued }
                return .toIdleWriter(writer, Self.take(&state.queue, upTo: maximumBatch))
            }
            switch handOver {
            case .refused: continuation.resume(throwing: ServiceStopping())
            case .queued: break
            case .toIdleWriter(let writer, let batch): writer.resume(returning: batch)
            }
        }
    }

    /// What becomes of a post as it arrives.
    private enum HandOver {
        /// The service is stopping: no post is taken in.
        case refused
        /// Queued for the next writer that finishes its batch.
        case queued
        /// A writer was idle: it gets the queue, this post among it.
        case toIdleWriter(Writer, [Waiting])
    }

    /// Writes until shutdown, then writes what is queued and ends.
    func run() async {
        await withDiscardingTaskGroup { group in
            for _ in 0..<concurrentStatements {
                group.addTask {
                    while let batch = await self.nextBatch() { await self.write(batch) }
                }
            }
            // Returns at graceful shutdown, throws when cancelled: either way, stop taking posts in.
            try? await gracefulShutdown()
            self.stop()
        }
    }

    /// What is queued, up to a batch, or once there is none, the next post; nil once stopping and empty.
    private func nextBatch() async -> [Waiting]? {
        await withCheckedContinuation { (writer: Writer) in
            let turn = state.withLock { state -> WriterTurn in
                if !state.queue.isEmpty { return .write(Self.take(&state.queue, upTo: maximumBatch)) }
                if state.stopping { return .stop }
                state.idle.append(writer)
                return .waitForPosts
            }
            switch turn {
            case .write(let batch): writer.resume(returning: batch)
            case .stop: writer.resume(returning: nil)
            case .waitForPosts: break
            }
        }
    }

    /// What a writer that asks for work gets.
    private enum WriterTurn {
        /// What is queued, up to a batch.
        case write([Waiting])
        /// Nothing queued and the service is stopping: the writer ends.
        case stop
        /// Nothing queued: the writer waits among the idle ones for the next post.
        case waitForPosts
    }

    /// No post is taken in from now on; idle writers end, busy ones write what is queued first.
    private func stop() {
        let idle = state.withLock { state in
            state.stopping = true
            defer { state.idle = [] }
            return state.idle
        }
        for writer in idle { writer.resume(returning: nil) }
    }

    /// The batch's commit, traced (when any of its posts is) in the trace of its first traced post, linked
    /// to the other traced posts'.
    private func commit(_ batch: [Waiting]) async throws -> [LogPosition] {
        let traced = batch.compactMap(\.context)
        guard let first = traced.first else { return try await events.appendPosted(batch.map(\.post)) }
        return try await withSpan("group commit", context: first, ofKind: .internal) { span in
            span.attributes["onthemap.batch.size"] = batch.count
            for context in traced.dropFirst() { span.addLink(SpanLink(context: context, attributes: [:])) }
            return try await events.appendPosted(batch.map(\.post))
        }
    }

    private func write(_ batch: [Waiting]) async {
        do {
            let positions = try await commit(batch)
            for (waiting, position) in zip(batch, positions) { waiting.continuation.resume(returning: position) }
        } catch is EventStore.AppendError where batch.count > 1 {
            await withTaskGroup(of: Void.self) { group in
                for waiting in batch {
                    group.addTask { await self.write([waiting]) }
                }
            }
        } catch {
            // The database just failed to take a batch in time, or is gone: the posts that queued behind it
            // are refused with it rather than given a wait of their own on top of the one they sat through:
            // two deadlines in a row would answer them later than an outage is to be answered.
            let behind = Database.isOutage(error) ? state.withLock { Self.take(&$0.queue, upTo: $0.queue.count) } : []
            for waiting in batch + behind { waiting.continuation.resume(throwing: error) }
        }
    }

    private static func take(_ queue: inout [Waiting], upTo limit: Int) -> [Waiting] {
        let batch = Array(queue.prefix(limit))
        queue.removeFirst(batch.count)
        return batch
    }
}
