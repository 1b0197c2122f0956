import Synchronization

/// Tells background loops in a test when to stop.
final class StopFlag: Sendable {
    private let stopped = Atomic<Bool>(false)
    var isStopped: Bool { stopped.load(ordering: .acquiring) }
    func stop() { stopped.store(true, ordering: .releasing) }
}
