import Foundation
import Logging
import NIOCore
import OnTheMapShared
import Prometheus
import ServiceLifecycle
import Synchronization

/// Follows locations-service's change feed (one long poll per gateway replica, however many clients
/// listen) and fans each change out to the connected live streams, with a heartbeat to keep idle
/// connections open through proxies.
final class LiveFeed: Service, Sendable {
    enum Message: Sendable {
        /// One change: its place in the log, and its frame, made once for every stream that writes it.
        case change(LogPosition, frame: ByteBuffer)
        case heartbeat
    }

    private let locations: LocationsClient
    private let logger: Logger
    private let cache: LatestListCache
    private let heartbeatInterval: Duration
    /// Streams open at once from one client address.
    let streamsPerAddress: Int
    private let subscribers = Mutex(Subscribers())
    private let nextID = Atomic<UInt64>(0)
    private let openStreams: Gauge?

    private struct Subscribers {
        var streams: [UInt64: (continuation: AsyncStream<Message>.Continuation, address: String?)] = [:]
        var perAddress: [String: Int] = [:]
    }

    init(
        locations: LocationsClient, cache: LatestListCache, logger: Logger, heartbeatInterval: Duration = .seconds(15),
        streamsPerAddress: Int = GatewayConfiguration.defaultStreamsPerClient, openStreams: Gauge? = nil
    ) {
        self.locations = locations
        self.cache = cache
        self.logger = logger
        self.heartbeatInterval = heartbeatInterval
        self.streamsPerAddress = streamsPerAddress
        self.openStreams = openStreams
    }

    /// A stream of what happens from now on, for a client at `address`; it ends when the gateway shuts
    /// down. Nil when that address already has `streamsPerAddress` streams open.
    func subscribe(address: String?) -> (id: UInt64, messages: AsyncStream<Message>)? {
        let id = nextID.add(1, ordering: .relaxed).newValue
        let (stream, continuation) = Self.makeStream()
        let count: Int? = subscribers.withLock { subscribers in
            if let address {
                let open = subscribers.perAddress[address, default: 0]
                guard open < streamsPerAddress else { return nil }
                subscribers.perAddress[address] = open + 1
            }
            subscribers.streams[id] = (continuation, address)
            return subscribers.streams.count
        }
        guard let count else { return nil }
        openStreams?.set(Double(count))
        continuation.onTermination = { [weak self] _ in self?.unsubscribe(id) }
        return (id, stream)
    }

    /// Ends one subscriber's stream.
    func end(_ id: UInt64) {
        subscribers.withLock { $0.streams[id] }?.continuation.finish()
    }

    func unsubscribe(_ id: UInt64) {
        let count = subscribers.withLock { subscribers in
            if let (_, address) = subscribers.streams.removeValue(forKey: id), let address {
                let open = subscribers.perAddress[address, default: 1] - 1
                subscribers.perAddress[address] = open > 0 ? open : nil
            }
            return subscribers.streams.count
        }
        openStreams?.set(Double(count))
    }

    var subscriberCount: Int { subscribers.withLock { $0.streams.count } }

    private func broadcast(_ message: Message) {
        for continuation in subscribers.withLock({ $0.streams.values.map(\.continuation) }) { Self.offer(message, to: continuation) }
    }

    /// Changes a stream may have waiting for its client. One that falls further behind (a client that
    /// reads too slowly, or a crowd the gateway cannot serve as fast as pins come) is ended after the
    /// changes it holds: its client reconnects with the last id it got and reads the rest from the log.
    /// Without a bound, 5,000 streams that fell behind took the gateway from 73 to 240 MB in a minute.
    static let backlogLimit = 256

    static func makeStream(limit: Int = backlogLimit) -> (AsyncStream<Message>, AsyncStream<Message>.Continuation) {
        // The oldest are kept: what is dropped is newer than all the client will get, so it is in the
        // stretch of the log the client reads on reconnecting.
        AsyncStream.makeStream(of: Message.self, bufferingPolicy: .bufferingOldest(limit))
    }

    /// Hands `message` to one stream, and ends the stream when it has no room left for it.
    static func offer(_ message: Message, to continuation: AsyncStream<Message>.Continuation) {
        if case .dropped = continuation.yield(message) { continuation.finish() }
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
        for continuation in subscribers.withLock({ $0.streams.values.map(\.continuation) }) { continuation.finish() }
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
                for event in page.events {
                    guard let position = LogPosition(event.id) else { continue }
                    broadcast(.change(position, frame: SSEFrame.event(event)))
                }
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
