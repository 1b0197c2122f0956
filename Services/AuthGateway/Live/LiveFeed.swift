import Foundation
import Logging
import OnTheMapShared
import ServiceLifecycle
import Synchronization

/// Follows locations-service's change feed (one long poll per gateway replica, however many clients
/// listen) and fans each change out to the connected live streams, with a heartbeat to keep idle
/// connections open through proxies.
final class LiveFeed: Service, Sendable {
    enum Message: Sendable {
        case change(LocationChangeEvent)
        case heartbeat
    }

    private let locations: LocationsClient
    private let logger: Logger
    private let cache: LatestListCache
    private let heartbeatInterval: Duration
    private let subscribers = Mutex<[UInt64: AsyncStream<Message>.Continuation]>([:])
    private let nextID = Atomic<UInt64>(0)

    init(locations: LocationsClient, cache: LatestListCache, logger: Logger, heartbeatInterval: Duration = .seconds(15)) {
        self.locations = locations
        self.cache = cache
        self.logger = logger
        self.heartbeatInterval = heartbeatInterval
    }

    /// A stream of what happens from now on; it ends when the gateway shuts down.
    func subscribe() -> (id: UInt64, messages: AsyncStream<Message>) {
        let id = nextID.add(1, ordering: .relaxed).newValue
        let (stream, continuation) = AsyncStream.makeStream(of: Message.self, bufferingPolicy: .bufferingNewest(10_000))
        continuation.onTermination = { [weak self] _ in self?.unsubscribe(id) }
        subscribers.withLock { $0[id] = continuation }
        return (id, stream)
    }

    /// Ends one subscriber's stream.
    func end(_ id: UInt64) {
        subscribers.withLock { $0[id] }?.finish()
    }

    func unsubscribe(_ id: UInt64) {
        _ = subscribers.withLock { $0.removeValue(forKey: id) }
    }

    var subscriberCount: Int { subscribers.withLock { $0.count } }

    private func broadcast(_ message: Message) {
        for continuation in subscribers.withLock({ Array($0.values) }) { continuation.yield(message) }
    }

    func run() async throws {
        await withDiscardingTaskGroup { group in
            group.addTask { await cancelWhenGracefulShutdown { await self.follow() } }
            group.addTask {
                await cancelWhenGracefulShutdown {
                    while (try? await Task.sleep(for: self.heartbeatInterval)) != nil { self.broadcast(.heartbeat) }
                }
            }
        }
        // Live streams end with the gateway, so shutdown is not held up by open connections.
        for continuation in subscribers.withLock({ Array($0.values) }) { continuation.finish() }
    }

    static let coalescing = Duration.milliseconds(50)

    private func follow() async {
        var cursor = "now"
        var pause = Duration.milliseconds(200)
        while !Task.isCancelled {
            do {
                // A cursor of its own rather than `now`, which moves: a stretch can then be read again.
                if cursor == "now" {
                    cursor = try await locations.changes(after: cursor, wait: 0, events: false, requestID: "live-feed").cursor
                }
                // With no live stream open, nobody needs the changes themselves, only to know that the log
                // moved: the service then answers with the head's cursor alone.
                let listening = subscriberCount > 0
                // The wait stays below the HTTP client's read timeout (10 s), so a quiet log is not an error.
                let page = try await locations.changes(after: cursor, wait: 5, events: listening, requestID: "live-feed")
                let moved = page.cursor != cursor
                if moved { cache.invalidate() }
                // Only once the feed has caught up can the cached list be trusted.
                cache.setFollowing(true)
                // A stream opened during a read without changes reads the same stretch again, with them.
                if !listening, subscriberCount > 0 { continue }
                page.events.forEach { broadcast(.change($0)) }
                cursor = page.cursor
                pause = .milliseconds(200)
                // While the log moves fast, read it at most every 50 ms, in bigger pages, instead of once
                // per append: each read costs both services a query and a round trip.
                if moved { try? await Task.sleep(for: Self.coalescing) }
            } catch {
                cache.setFollowing(false)
                if Task.isCancelled { return }
                logger.warning("live feed lost locations-service; retrying", metadata: ["error": "\(String(reflecting: error))"])
                try? await Task.sleep(for: pause)
                pause = min(pause * 2, .seconds(5))
            }
        }
    }
}
