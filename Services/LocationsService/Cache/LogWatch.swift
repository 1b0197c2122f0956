import Synchronization

/// Wakes those waiting for the log to move: the change feed's long polls. A wake-up says "look again",
/// nothing more; readers always go back to the log.
final class LogWatch: Sendable {
    private struct State {
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
        /// Waits cancelled before they began waiting.
        var ended: Set<UInt64> = []
        var next: UInt64 = 0
    }
    private let state = Mutex(State())

    func notify() {
        let waiters = state.withLock { state in
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns at the next `notify()`, or after `timeout`, whichever comes first.
    func wait(timeout: Duration) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.nextNotification() }
            group.addTask { try? await Task.sleep(for: timeout) }
            await group.next()
            group.cancelAll()
        }
    }

    /// Returns at the next `notify()`, or when the task is cancelled.
    private func nextNotification() async {
        let id = state.withLock { state -> UInt64 in
            state.next += 1
            return state.next
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let endedAlready = state.withLock { state -> Bool in
                    if state.ended.remove(id) != nil { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if endedAlready { continuation.resume() }
            }
        } onCancel: {
            self.end(id)
        }
        state.withLock { _ = $0.ended.remove(id) }
    }

    private func end(_ id: UInt64) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if let waiter = state.waiters.removeValue(forKey: id) { return waiter }
            state.ended.insert(id)
            return nil
        }
        waiter?.resume()
    }
}
