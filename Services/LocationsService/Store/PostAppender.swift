import OnTheMapShared
import ServiceKit
import ServiceLifecycle
import Tracing

/// Group commit for new pins: posts that arrive while earlier ones are being written wait and go
/// together, as one statement and one commit, instead of one transaction each (a `Batches`).
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
/// The appender is a service of the service group: at shutdown it stops taking posts in (a later one is
/// refused as `ServiceStopping`, never left waiting) and ends once every post taken in is written.
final class PostAppender: Service, Sendable {
    typealias Post = (location: StudentLocation, metadata: EventMetadata)

    private struct Waiting {
        let post: Post
        let continuation: CheckedContinuation<LogPosition, any Error>
        /// The posting request's trace, when traces are on.
        let context: ServiceContext?
    }

    private let events: EventStore
    private let batches: Batches<Waiting>

    init(events: EventStore, concurrentStatements: Int = 2, maximumBatch: Int = 64) {
        self.events = events
        self.batches = Batches(slots: concurrentStatements, maximumBatch: maximumBatch)
    }

    /// Posts waiting for a slot.
    var queuedCount: Int { batches.queued }

    /// Whether shutdown has begun: no post is taken in.
    var stopped: Bool { batches.stopped }

    func append(_ location: StudentLocation, metadata: EventMetadata) async throws -> LogPosition {
        let context = ServiceContext.current
        let traced = RequestTracing.traces(context) ? context : nil
        return try await withCheckedThrowingContinuation { continuation in
            let waiting = Waiting(post: (location, metadata), continuation: continuation, context: traced)
            if let refused = batches.submit(waiting, write: { await self.write($0) }) {
                refused.continuation.resume(throwing: ServiceStopping())
            }
        }
    }

    /// Waits for shutdown, then stops taking posts in and returns once every post taken in is written.
    func run() async {
        // Returns at graceful shutdown, throws when cancelled: either way, stop taking posts in.
        try? await gracefulShutdown()
        await batches.stop()
    }

    /// The batch's commit, traced (when any of its posts is) in the trace of its first traced post, linked
    /// to the other traced posts'.
    private func commit(_ batch: [Waiting]) async throws -> [LogPosition] {
        let traced = batch.compactMap(\.context)
        guard let first = traced.first, let tracer = RequestTracing.tracer else { return try await events.appendPosted(batch.map(\.post)) }
        return try await tracer.withSpan("group commit", context: first, ofKind: .internal) { span in
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
            let behind = Database.isOutage(error) ? batches.takeQueued() : []
            for waiting in batch + behind { waiting.continuation.resume(throwing: error) }
        }
    }
}
