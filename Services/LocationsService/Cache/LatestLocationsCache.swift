import Crypto
import NIOCore
import OnTheMapShared
import ServiceKit
import ServiceLifecycle
import Synchronization

/// The hot read: the newest 100 pins as ready-to-send JSON bytes with a strong ETag.
///
/// A write on this replica, or a notification from another, bumps the generation; the next read builds
/// the bytes again (once, however many requests wait for it). While the change listener is not connected
/// the cache cannot know of other replicas' writes, so it is not trusted and every read goes to the database.
///
/// The builds run one at a time in `run()`, a service the service group owns, woken through a stream
/// that keeps one pending request: readers that find the list stale wait for the next build, and each
/// build serves every reader that was waiting when it began. On shutdown, waiting readers are refused.
final class LatestLocationsCache: Service, Sendable {
    private typealias Reader = CheckedContinuation<CachedJSON, any Error>

    private struct State {
        var generation: UInt64 = 0
        var coherent = false
        var snapshot: (generation: UInt64, value: CachedJSON)?
        /// Readers waiting for a list at least as new as the generation they found stale.
        var waiting: [(generation: UInt64, reader: Reader)] = []
        var stopped = false

        /// The snapshot, if it is trusted and of the current generation.
        var fresh: CachedJSON? {
            guard coherent, let snapshot, snapshot.generation == generation else { return nil }
            return snapshot.value
        }
    }

    private let state = Mutex(State())
    private let load: @Sendable () async throws -> [StudentLocation]
    private let builds = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))

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
        state.withLock { $0.fresh }
    }

    /// Readers waiting for a build.
    var waitingCount: Int { state.withLock { $0.waiting.count } }

    /// The list as of now: the cached one if it is fresh, else the next one built.
    func current() async throws -> CachedJSON {
        if let ready { return ready }
        return try await withCheckedThrowingContinuation { (reader: Reader) in
            let answer: Result<CachedJSON, any Error>? = state.withLock { state in
                if let fresh = state.fresh { return .success(fresh) }
                if state.stopped { return .failure(ServiceStopping()) }
                state.waiting.append((state.generation, reader))
                return nil
            }
            if let answer { reader.resume(with: answer) } else { builds.continuation.yield() }
        }
    }

    /// Builds the list whenever a reader waits for it, until shutdown; then refuses whoever still waits.
    func run() async {
        await cancelWhenGracefulShutdown {
            for await _ in self.builds.stream {
                await self.build()
            }
        }
        let waiting = state.withLock { state in
            state.stopped = true
            defer { state.waiting = [] }
            return state.waiting
        }
        for (_, reader) in waiting { reader.resume(throwing: ServiceStopping()) }
    }

    /// One build, for the generation current as it begins: it serves the readers waiting for that one or
    /// an older one. Readers of a newer generation (a write landed meanwhile) wait for the next build.
    private func build() async {
        guard let generation = state.withLock({ $0.waiting.isEmpty ? nil : $0.generation }) else { return }
        let result: Result<CachedJSON, any Error>
        do {
            result = .success(CachedJSON(tagging: StudentLocationList(results: try await load()).json))
        } catch {
            result = .failure(error)
        }
        // A database that failed to answer in time, or is gone, fails the readers of newer generations with
        // it too, rather than giving them a wait of their own on top of the one they sat through.
        let upTo = result.isOutage ? UInt64.max : generation
        let (served, more) = state.withLock { state in
            if case .success(let value) = result { state.snapshot = (generation, value) }
            let served = state.waiting.filter { $0.generation <= upTo }
            state.waiting.removeAll { $0.generation <= upTo }
            return (served, !state.waiting.isEmpty)
        }
        for (_, reader) in served { reader.resume(with: result) }
        if more { builds.continuation.yield() }
    }
}

extension CachedJSON {
    /// `body` with a strong tag made from its bytes: the same document always has the same tag, on every
    /// replica.
    init(tagging body: ByteBuffer, contentType: String = "application/json") {
        let digest = body.withUnsafeReadableBytes { SHA256.hash(data: $0) }.prefix(12).hexString
        self.init(body: body, etag: "\"\(digest)\"", contentType: contentType)
    }
}

extension Result where Failure == any Error {
    /// Whether this failed because the database could not be asked in time.
    fileprivate var isOutage: Bool {
        if case .failure(let error) = self { return Database.isOutage(error) }
        return false
    }
}
