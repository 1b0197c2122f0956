import Synchronization

/// Batching of work that is cheaper done many at once (one statement, one commit, one round trip) than
/// one by one, decided here without tasks or locks: `Batches` only performs what this value says, so every
/// order of arrivals, ends and stops can be tried on the value alone.
///
/// At most `slots` batches are in flight. An item that finds a free slot starts a batch at once, so a lone
/// item waits for nothing; an item that finds every slot taken queues, and the next batch to end takes the
/// queue (up to `maximumBatch`) as its next batch. Once stopped, no item is taken in and the batches in
/// flight write what is queued before they end.
public struct BatchQueue<Item> {
    /// What becomes of an item as it arrives.
    public enum Arrival {
        /// Stopped: the item is not taken in (it is given back to be answered).
        case refused(Item)
        /// Queued for the next batch that ends.
        case queued
        /// A slot was free: this is a new batch (the item and any queued before it), to be written now.
        case start([Item])
    }

    /// What the slot of a batch that has just ended does next.
    public enum AfterBatch {
        /// Write this batch: what queued meanwhile.
        case write([Item])
        /// Nothing queued: the slot is free.
        case free
        /// Nothing queued, stopped, and this was the last batch in flight: everything taken in is written.
        case drained
    }

    public let slots: Int
    public let maximumBatch: Int
    private var queue: [Item] = []
    /// Batches in flight (slots taken).
    public private(set) var running = 0
    public private(set) var stopped = false

    public init(slots: Int, maximumBatch: Int = .max) {
        precondition(slots > 0 && maximumBatch > 0, "a batch queue needs a slot and room for an item")
        self.slots = slots
        self.maximumBatch = maximumBatch
    }

    /// Items waiting for a slot.
    public var queued: Int { queue.count }

    public mutating func arrive(_ item: Item) -> Arrival {
        guard !stopped else { return .refused(item) }
        queue.append(item)
        guard running < slots else { return .queued }
        running += 1
        return .start(nextBatch())
    }

    /// Called once each batch `arrive` started or `batchEnded` handed out has been written.
    public mutating func batchEnded() -> AfterBatch {
        precondition(running > 0, "a batch ended that was never started")
        if !queue.isEmpty { return .write(nextBatch()) }
        running -= 1
        return stopped && running == 0 ? .drained : .free
    }

    /// Takes nothing in from now on; true when nothing is in flight (everything taken in is written),
    /// otherwise the last batch to end says `.drained`.
    public mutating func stop() -> Bool {
        stopped = true
        return running == 0
    }

    /// Everything queued, taken out of the queue (to be answered at once, as when the work it waits for
    /// cannot be done).
    public mutating func takeQueued() -> [Item] {
        defer { queue = [] }
        return queue
    }

    private mutating func nextBatch() -> [Item] {
        guard queue.count > maximumBatch else { return takeQueued() }
        let batch = Array(queue.prefix(maximumBatch))
        queue.removeFirst(maximumBatch)
        return batch
    }
}

/// A `BatchQueue` run: each batch it starts is written by a task of its own, which goes on with what
/// queued meanwhile until nothing has. The tasks are detached from the item that started them (a batch
/// is everyone's, not its first item's request), and `stop()` waits for them.
public final class Batches<Item: Sendable>: Sendable {
    private struct State {
        var queue: BatchQueue<Item>
        /// Who waits in `stop()` for the batches in flight.
        var stopping: [CheckedContinuation<Void, Never>] = []
    }

    private let state: Mutex<State>

    public init(slots: Int, maximumBatch: Int = .max) {
        state = Mutex(State(queue: BatchQueue(slots: slots, maximumBatch: maximumBatch)))
    }

    /// Items waiting for a slot.
    public var queued: Int { state.withLock { $0.queue.queued } }

    /// Whether `stop()` was called: nothing is taken in.
    public var stopped: Bool { state.withLock { $0.queue.stopped } }

    /// Takes `item` in, to be written by `write` in a batch with whatever else is waiting; the item is
    /// given back once stopped. `write` must answer every item of its batch.
    public func submit(_ item: Item, write: @escaping @Sendable ([Item]) async -> Void) -> Item? {
        switch state.withLock({ $0.queue.arrive(item) }) {
        case .refused(let item): return item
        case .queued: return nil
        case .start(let batch):
            Task.detached { await self.writeUntilFree(batch, write) }
            return nil
        }
    }

    /// Everything queued, out of the queue: for a `write` that learns the queued items cannot be written
    /// either (the database is gone) and answers them with its own batch.
    public func takeQueued() -> [Item] {
        state.withLock { $0.queue.takeQueued() }
    }

    /// Takes nothing in from now on, and returns once every item taken in has been written.
    public func stop() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let drained = state.withLock { state in
                let drained = state.queue.stop()
                if !drained { state.stopping.append(continuation) }
                return drained
            }
            if drained { continuation.resume() }
        }
    }

    private func writeUntilFree(_ first: [Item], _ write: @Sendable ([Item]) async -> Void) async {
        var batch = first
        while true {
            await write(batch)
            let (next, stopped) = state.withLock { state -> (BatchQueue<Item>.AfterBatch, [CheckedContinuation<Void, Never>]) in
                let next = state.queue.batchEnded()
                guard case .drained = next else { return (next, []) }
                defer { state.stopping = [] }
                return (next, state.stopping)
            }
            switch next {
            case .write(let queued): batch = queued
            case .free: return
            case .drained:
                for waiting in stopped { waiting.resume() }
                return
            }
        }
    }
}
