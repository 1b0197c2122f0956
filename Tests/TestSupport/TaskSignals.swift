import NIOCore
import NIOPosix
import Synchronization

/// Tells background loops in a test when to stop.
public final class StopFlag: Sendable {
    public init() {}
    private let stopped = Atomic<Bool>(false)
    public var isStopped: Bool { stopped.load(ordering: .acquiring) }
    public func stop() { stopped.store(true, ordering: .releasing) }
}

/// State that tasks, threads or callbacks change while a test runs, and waits for it to come to something.
/// A wait is resumed by the change that makes its condition true, or by its deadline (a task scheduled on
/// an event loop), never by looking again later.
public final class Watched<State: Sendable>: Sendable {
    private struct Waiter {
        let condition: @Sendable (State) -> Bool
        let continuation: CheckedContinuation<Bool, Never>
        var deadline: Scheduled<Void>?
    }

    private struct Guarded {
        var state: State
        var waiters: [UInt64: Waiter] = [:]
        var next: UInt64 = 0
    }

    private let guarded: Mutex<Guarded>

    public init(_ state: State) { guarded = Mutex(Guarded(state: state)) }

    public var value: State { guarded.withLock { $0.state } }

    /// Changes the state, then resumes the waits whose condition it made true.
    public func update(_ change: (inout State) -> Void) {
        let due = guarded.withLock { guarded in
            change(&guarded.state)
            let state = guarded.state
            let due = guarded.waiters.filter { $0.value.condition(state) }
            for id in due.keys { guarded.waiters[id] = nil }
            return Array(due.values)
        }
        for waiter in due {
            waiter.deadline?.cancel()
            waiter.continuation.resume(returning: true)
        }
    }

    /// Whether `condition` holds now or comes to hold within `limit`; false at the deadline, or at once
    /// when the waiting task is cancelled.
    public func wait(within limit: Duration, until condition: @escaping @Sendable (State) -> Bool) async -> Bool {
        let id = guarded.withLock { guarded in
            guarded.next += 1
            return guarded.next
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let waiting = guarded.withLock { guarded -> Bool? in
                    if condition(guarded.state) { return true }
                    // Checked under the lock: a cancellation handler that ran before found no waiter to end.
                    if Task.isCancelled { return false }
                    guarded.waiters[id] = Waiter(condition: condition, continuation: continuation)
                    return nil
                }
                if let waiting {
                    continuation.resume(returning: waiting)
                    return
                }
                let deadline = MultiThreadedEventLoopGroup.singleton.any().scheduleTask(in: TimeAmount(limit)) { self.end(id) }
                let ended = guarded.withLock { guarded -> Bool in
                    guard guarded.waiters[id] != nil else { return true }
                    guarded.waiters[id]?.deadline = deadline
                    return false
                }
                if ended { deadline.cancel() }
            }
        } onCancel: {
            end(id)
        }
    }

    private func end(_ id: UInt64) {
        let waiter = guarded.withLock { $0.waiters.removeValue(forKey: id) }
        waiter?.deadline?.cancel()
        waiter?.continuation.resume(returning: false)
    }
}

/// A count that tasks add to and a test waits on: the event itself, not a pause.
public final class SharedCount: Sendable {
    public init() {}
    private let count = Watched(0)
    public var value: Int { count.value }
    public func add(_ amount: Int = 1) { count.update { $0 += amount } }

    /// Whether the count is at least `target`, now or within `limit`.
    public func reaches(_ target: Int, within limit: Duration) async -> Bool {
        await count.wait(within: limit) { $0 >= target }
    }

    /// Returns once `amount` more have been added than now; throws when that takes longer than `limit`.
    public func grows(by amount: Int, within limit: Duration = .seconds(60)) async throws {
        let target = value + amount
        guard await reaches(target, within: limit) else { throw HarnessError("the count reached \(value) of \(target) within \(limit)") }
    }
}
