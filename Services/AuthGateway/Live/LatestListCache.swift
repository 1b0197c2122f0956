import NIOCore
import ServiceKit
import Synchronization

/// The gateway's copy of the hot read (the latest 100 pins, as locations-service encoded them), so the
/// most common request of all is answered without a hop. It is trusted only while the live feed is
/// following the log: every change the feed reports, and every write through this gateway, drops it.
final class LatestListCache: Sendable {
    private struct State {
        var entry: CachedJSON?
        var generation: UInt64 = 0
        var following = false
    }
    private let state = Mutex(State())

    /// The cached list, if it can be trusted now.
    var current: CachedJSON? {
        state.withLock { $0.following ? $0.entry : nil }
    }

    /// The generation to pass to `store` after fetching, so a fetch that raced a change is not kept.
    var generation: UInt64 { state.withLock { $0.generation } }

    func store(_ entry: CachedJSON, fetchedAt generation: UInt64) {
        state.withLock { state in
            if state.generation == generation { state.entry = entry }
        }
    }

    func invalidate() {
        state.withLock { state in
            state.generation &+= 1
            state.entry = nil
        }
    }

    /// Whether the live feed follows the log. Any change of it drops the entry: what was cached before
    /// may have missed changes.
    func setFollowing(_ following: Bool) {
        state.withLock { state in
            guard state.following != following else { return }
            state.following = following
            state.generation &+= 1
            state.entry = nil
        }
    }
}
