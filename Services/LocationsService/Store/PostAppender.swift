import OnTheMapShared
import Synchronization

/// Group commit for new pins: posts that arrive while earlier ones are being written wait and go
/// together, as one statement and one commit, instead of one transaction each.
///
/// At most `concurrentStatements` batches are in flight; a post that finds a free slot is written at
/// once, so a lone post waits for nothing. Two slots: one batch can execute while the other waits for its
/// WAL flush, and whatever arrives meanwhile queues for the next batch. With four, posts under load went
/// out in smaller batches (0.32-0.45 committed transactions per post against 0.22-0.25 with two, on 2
/// cores with 32 clients), and every commit costs PostgreSQL and this service CPU that posts then lack.
///
/// Every post is answered only after its own batch committed, so nothing acknowledged can be lost. A
/// batch fails as a whole when any one of its posts clashes with the log (a reused idempotency key); its
/// posts are then written one by one, so each gets its own answer and none fails for another's sake.
final class PostAppender: Sendable {
    typealias Post = (location: StudentLocation, metadata: EventMetadata)

    private struct Waiting {
        let post: Post
        let continuation: CheckedContinuation<LogPosition, any Error>
    }

    private struct State {
        var queue: [Waiting] = []
        var inFlight = 0
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

    func append(_ location: StudentLocation, metadata: EventMetadata) async throws -> LogPosition {
        try await withCheckedThrowingContinuation { continuation in
            let batch = state.withLock { state -> [Waiting]? in
                state.queue.append(Waiting(post: (location, metadata), continuation: continuation))
                guard state.inFlight < concurrentStatements else { return nil }
                state.inFlight += 1
                return Self.take(&state.queue, upTo: maximumBatch)
            }
            if let batch {
                Task { await self.drain(startingWith: batch) }
            }
        }
    }

    /// Writes `batch`, then whatever queued meanwhile, until the queue is empty.
    private func drain(startingWith batch: [Waiting]) async {
        var next: [Waiting]? = batch
        while let current = next {
            await write(current)
            next = state.withLock { state in
                if state.queue.isEmpty {
                    state.inFlight -= 1
                    return nil
                }
                return Self.take(&state.queue, upTo: maximumBatch)
            }
        }
    }

    private func write(_ batch: [Waiting]) async {
        do {
            let positions = try await events.appendPosted(batch.map(\.post))
            for (waiting, position) in zip(batch, positions) { waiting.continuation.resume(returning: position) }
        } catch is EventStore.AppendError where batch.count > 1 {
            await withTaskGroup(of: Void.self) { group in
                for waiting in batch {
                    group.addTask { await self.write([waiting]) }
                }
            }
        } catch {
            for waiting in batch { waiting.continuation.resume(throwing: error) }
        }
    }

    private static func take(_ queue: inout [Waiting], upTo limit: Int) -> [Waiting] {
        let batch = Array(queue.prefix(limit))
        queue.removeFirst(batch.count)
        return batch
    }
}
