import OnTheMapShared
import Synchronization

/// The time of day where it decides what a service does: when a session expires, how long a cached
/// session is trusted. The services read `SystemClock`; tests hold a `ManualClock` and move it on
/// instead of sleeping. (Timeouts and pauses keep Swift's `ContinuousClock`: they decide no outcome
/// a test checks by the clock.)
public protocol WallClock: Sendable {
    var now: Timestamp { get }
}

/// The system's time of day.
public struct SystemClock: WallClock {
    public init() {}
    public var now: Timestamp { .now() }
}

/// A time of day that moves only when told to.
public final class ManualClock: WallClock {
    private let time: Mutex<Timestamp>

    public init(_ start: Timestamp = .now()) {
        time = Mutex(start)
    }

    public var now: Timestamp { time.withLock { $0 } }

    public func advance(by duration: Duration) {
        time.withLock { $0 = $0.adding(duration) }
    }
}
