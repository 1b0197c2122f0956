import Synchronization

/// Runs `operation` but answers by `timeout` at the latest, throwing `DeadlineExceeded`.
///
/// The operation runs in its own task so that the caller is released on time even when the operation
/// ignores cancellation (a query on a connection whose server vanished); it is cancelled and left to end.
public func withDeadline<T: Sendable>(_ timeout: Duration, _ operation: @escaping @Sendable () async throws -> T) async throws -> T {
    let race = DeadlineRace<T>()
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            race.start(continuation: continuation, timeout: timeout, operation: operation)
        }
    } onCancel: {
        race.cancel()
    }
}

public struct DeadlineExceeded: Error {
    public init() {}
}

/// Whichever finishes first, the operation or the timer, resumes the caller; the other is cancelled.
private final class DeadlineRace<T: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<T, any Error>?
        var work: Task<Void, Never>?
        var timer: Task<Void, Never>?
    }
    private let state = Mutex(State())

    func start(
        continuation: CheckedContinuation<T, any Error>, timeout: Duration,
        operation: @escaping @Sendable () async throws -> T
    ) {
        state.withLock { $0.continuation = continuation }
        let work = Task {
            do { self.finish(.success(try await operation())) } catch { self.finish(.failure(error)) }
        }
        let timer = Task {
            guard (try? await Task.sleep(for: timeout)) != nil else { return }
            self.finish(.failure(DeadlineExceeded()))
        }
        state.withLock {
            $0.work = work
            $0.timer = timer
        }
    }

    func cancel() {
        let work = state.withLock { $0.work }
        work?.cancel()
    }

    private func finish(_ result: Result<T, any Error>) {
        let (continuation, work, timer) = state.withLock { state in
            defer { state.continuation = nil }
            return (state.continuation, state.work, state.timer)
        }
        guard let continuation else { return }
        timer?.cancel()
        if case .failure(let error) = result, error is DeadlineExceeded { work?.cancel() }
        continuation.resume(with: result)
    }
}
