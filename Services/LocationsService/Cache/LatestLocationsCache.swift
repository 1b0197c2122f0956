import Crypto
import NIOCore
import OnTheMapShared
import ServiceKit
import Synchronization

/// The hot read: the newest 100 pins as ready-to-send JSON bytes with a strong ETag.
///
/// A write on this replica, or a notification from another, bumps the generation; the next read builds
/// the bytes again (once, however many requests wait for it). While the change listener is not connected
/// the cache cannot know of other replicas' writes, so it is not trusted and every read goes to the database.
final class LatestLocationsCache: Sendable {
    private struct State {
        var generation: UInt64 = 0
        var coherent = false
        var snapshot: (generation: UInt64, value: CachedJSON)?
        var rebuild: (generation: UInt64, task: Task<CachedJSON, any Error>)?
    }

    private let state = Mutex(State())
    private let load: @Sendable () async throws -> [StudentLocation]

    init(load: @escaping @Sendable () async throws -> [StudentLocation]) {
        self.load = load
    }

    /// The log moved: whatever is cached is stale.
    func invalidate() {
        state.withLock { $0.generation &+= 1 }
    }

    /// Whether change notifications are arriving, and so whether a cached snapshot can be trusted.
    func setCoherent(_ coherent: Bool) {
        state.withLock {
            $0.coherent = coherent
            $0.generation &+= 1
        }
    }

    /// The cached list if it can be served as it is, without waiting: trusted and not stale.
    var ready: CachedJSON? {
        state.withLock { state in
            guard state.coherent, let snapshot = state.snapshot, snapshot.generation == state.generation else { return nil }
            return snapshot.value
        }
    }

    func current() async throws -> CachedJSON {
        let (hit, pending): (CachedJSON?, Task<CachedJSON, any Error>?) = state.withLock { state in
            if state.coherent, let snapshot = state.snapshot, snapshot.generation == state.generation {
                return (snapshot.value, nil)
            }
            if let rebuild = state.rebuild, rebuild.generation == state.generation {
                return (nil, rebuild.task)
            }
            let generation = state.generation
            let task = Task { try await self.build(generation: generation) }
            state.rebuild = (generation, task)
            return (nil, task)
        }
        if let hit { return hit }
        return try await pending!.value
    }

    private func build(generation: UInt64) async throws -> CachedJSON {
        do {
            let bytes = StudentLocationList(results: try await load()).jsonBytes
            let digest = SHA256.hash(data: bytes).prefix(12).hexString
            let snapshot = CachedJSON(body: ByteBuffer(bytes: bytes), etag: "\"\(digest)\"")
            state.withLock { state in
                if state.snapshot.map({ $0.generation <= generation }) ?? true {
                    state.snapshot = (generation, snapshot)
                }
                if state.rebuild?.generation == generation { state.rebuild = nil }
            }
            return snapshot
        } catch {
            state.withLock { state in
                if state.rebuild?.generation == generation { state.rebuild = nil }
            }
            throw error
        }
    }
}
