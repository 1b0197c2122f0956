import Synchronization

/// Tells background loops in a test when to stop.
public final class StopFlag: Sendable {
    public init() {}
    private let stopped = Atomic<Bool>(false)
    public var isStopped: Bool { stopped.load(ordering: .acquiring) }
    public func stop() { stopped.store(true, ordering: .releasing) }
}

/// A count that tasks add to and a test waits on: the event itself, not a pause.
public final class SharedCount: Sendable {
    public init() {}
    private let count = Atomic<Int>(0)
    public var value: Int { count.load(ordering: .acquiring) }
    public func add(_ amount: Int = 1) { count.add(amount, ordering: .releasing) }

    /// Returns once `amount` more have been added than now.
    public func grows(by amount: Int) async throws {
        let target = value + amount
        while value < target { try await Task.sleep(for: .milliseconds(5)) }
    }
}

/// How long `condition` took to come true, asked every `interval`; nil when it did not within `limit`.
/// For state a test can only look at from outside (a gauge on /metrics, a status a client reports).
public func waitFor(
    within limit: Duration, every interval: Duration = .milliseconds(20), _ condition: () async throws -> Bool
) async throws -> Duration? {
    let start = ContinuousClock.now
    while ContinuousClock.now - start < limit {
        if try await condition() { return ContinuousClock.now - start }
        try await Task.sleep(for: interval)
    }
    return nil
}
