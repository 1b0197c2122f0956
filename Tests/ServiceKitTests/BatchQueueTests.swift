import Synchronization
import Testing

@testable import ServiceKit

/// The batching that group commit and the write allowances share, as a value: which items start a batch,
/// which wait, what each ending batch takes, and what a stop lets finish.
@Suite struct BatchQueueTests {
    /// The arrival's batch, or nil when it queued or was refused.
    private func started(_ arrival: BatchQueue<Int>.Arrival) -> [Int]? {
        if case .start(let batch) = arrival { return batch }
        return nil
    }

    private func handed(_ after: BatchQueue<Int>.AfterBatch) -> [Int]? {
        if case .write(let batch) = after { return batch }
        return nil
    }

    @Test func aLoneItemStartsItsBatchAtOnce() {
        var queue = BatchQueue<Int>(slots: 2)
        var batch = started(queue.arrive(1))
        #expect(batch == [1])
        #expect(queue.running == 1)
        guard case .free = queue.batchEnded() else {
            Issue.record("the slot should be free again")
            return
        }
        #expect(queue.running == 0)
        batch = started(queue.arrive(2))
        #expect(batch == [2])
    }

    @Test func itemsArrivingWhileEverySlotIsTakenGoTogetherInTheNextBatchToEnd() {
        var queue = BatchQueue<Int>(slots: 2)
        var batch = started(queue.arrive(1))
        #expect(batch == [1])
        batch = started(queue.arrive(2))
        #expect(batch == [2])
        for item in 3...6 {
            guard case .queued = queue.arrive(item) else {
                Issue.record("\(item) should queue behind two batches")
                return
            }
        }
        #expect(queue.queued == 4)
        batch = handed(queue.batchEnded())
        #expect(batch == [3, 4, 5, 6])
        #expect(queue.running == 2)
        guard case .free = queue.batchEnded(), case .free = queue.batchEnded() else {
            Issue.record("both slots should be free once the queue is written")
            return
        }
        #expect(queue.running == 0)
    }

    @Test func aBatchTakesAtMostTheMaximumAndTheRestWaitsInOrder() {
        var queue = BatchQueue<Int>(slots: 1, maximumBatch: 3)
        var batch = started(queue.arrive(0))
        #expect(batch == [0])
        for item in 1...7 { _ = queue.arrive(item) }
        batch = handed(queue.batchEnded())
        #expect(batch == [1, 2, 3])
        batch = handed(queue.batchEnded())
        #expect(batch == [4, 5, 6])
        batch = handed(queue.batchEnded())
        #expect(batch == [7])
        #expect(queue.queued == 0)
    }

    @Test func aStopRefusesNewItemsAndTheBatchesInFlightWriteWhatIsQueuedFirst() {
        var queue = BatchQueue<Int>(slots: 2)
        _ = queue.arrive(1)
        _ = queue.arrive(2)
        _ = queue.arrive(3)
        let drained = queue.stop()
        #expect(!drained, "two batches are in flight")
        guard case .refused(let item) = queue.arrive(4) else {
            Issue.record("an item after the stop should be refused")
            return
        }
        #expect(item == 4)
        let batch = handed(queue.batchEnded())
        #expect(batch == [3])
        guard case .free = queue.batchEnded() else {
            Issue.record("one batch is still in flight")
            return
        }
        guard case .drained = queue.batchEnded() else {
            Issue.record("the last batch to end should say everything is written")
            return
        }
    }

    @Test func aStopWithNothingInFlightIsDrainedAtOnce() {
        var queue = BatchQueue<Int>(slots: 1)
        let drained = queue.stop()
        #expect(drained)
        guard case .refused = queue.arrive(1) else {
            Issue.record("nothing is taken in once stopped")
            return
        }
    }

    @Test func takingTheQueuedLeavesTheBatchesInFlightTheirSlots() {
        var queue = BatchQueue<Int>(slots: 1)
        _ = queue.arrive(1)
        _ = queue.arrive(2)
        _ = queue.arrive(3)
        let taken = queue.takeQueued()
        #expect(taken == [2, 3])
        guard case .free = queue.batchEnded() else {
            Issue.record("nothing is left to write")
            return
        }
    }

    /// Run: every item submitted is written exactly once, never more than `slots` batches at a time, and
    /// `stop()` returns only after the last one is.
    @Test func batchesWriteEveryItemOnceWithinTheirSlotsAndStopWaitsForThem() async {
        let batches = Batches<Int>(slots: 2, maximumBatch: 8)
        let seen = Mutex((written: [Int](), inFlight: 0, most: 0, sizes: [Int]()))
        let write: @Sendable ([Int]) async -> Void = { batch in
            seen.withLock { seen in
                seen.inFlight += 1
                seen.most = max(seen.most, seen.inFlight)
                seen.sizes.append(batch.count)
            }
            await Task.yield()
            seen.withLock { seen in
                seen.written += batch
                seen.inFlight -= 1
            }
        }
        await withTaskGroup(of: Void.self) { group in
            for item in 0..<500 {
                group.addTask { #expect(batches.submit(item, write: write) == nil) }
            }
        }
        await batches.stop()
        #expect(batches.submit(500, write: write) == 500)
        let final = seen.withLock { $0 }
        #expect(final.written.sorted() == Array(0..<500))
        #expect(final.most <= 2)
        #expect(final.sizes.allSatisfy { $0 <= 8 })
        #expect(final.inFlight == 0)
    }
}
