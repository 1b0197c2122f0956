import Synchronization

/// A `TaskExecutor` whose jobs run only when a test calls `runUntilIdle()`, on the test's own thread. A task
/// started with it as its preference (`Task(executorPreference:)`) has, once `runUntilIdle()` returns, gone
/// as far as it can: finished, or suspended until something outside it (a continuation resumed, a
/// cancellation) gives it more to do. So a test knows what such a task has done without a pause or a poll.
public final class ManualTaskExecutor: TaskExecutor {
    private let jobs = Mutex<[UnownedJob]>([])

    public init() {}

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        jobs.withLock { $0.append(job) }
    }

    /// Runs every job enqueued, and those they enqueue in turn, until none is left.
    public func runUntilIdle() {
        while let job = jobs.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) {
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}
