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
