import Synchronization

/// Tells background loops in a test when to stop.
public final class StopFlag: Sendable {
    public init() {}
    private let stopped = Atomic<Bool>(false)
    public var isStopped: Bool { stopped.load(ordering: .acquiring) }
    public func stop() { stopped.store(true, ordering: .releasing) }
}
