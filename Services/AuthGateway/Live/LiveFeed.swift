import Foundation
import Logging
import NIOCore
import OnTheMapShared
import Prometheus
import ServiceLifecycle
import Synchronization

/// Follows locations-service's change feed (one long poll per gateway replica, however many clients
/// listen) and fans each change out to the connected live streams, with a heartbeat to keep idle
/// connections open through proxies. Each change is framed once, and reaches the streams of an event loop
/// with one hop to that loop.
final class LiveFeed: Service, Sendable {
    enum Message: Sendable {
        /// One change: its place in the log, and its frame, made once for every stream that writes it.
        case change(LogPosition, frame: LiveFrame)
        case heartbeat
    }

    private let locations: LocationsClient
    private let logger: Logger
    private let cache: LatestListCache
    private let heartbeatInterval: Duration
    /// What the heartbeat, the coalescing pause and the pause after a failure are timed by.
    private let clock: any Clock<Duration>
    /// Streams open at once from one client address.
    let streamsPerAddress: Int
    private let subscribers = Mutex(Subscribers())
    private let nextID = Atomic<UInt64>(0)
    private let openStreams: Gauge?

    private struct Subscribers {
        /// The streams, by the event loop they are served on (one group per loop, kept once made).
        var loops: [ObjectIdentifier: LoopStreams] = [:]
        /// Every open stream, with its client's address.
        var members: [UInt64: String?] = [:]
        var perAddress: [String: Int] = [:]
    }

    init(
        locations: LocationsClient, cache: LatestListCache, logger: Logger, heartbeatInterval: Duration = .seconds(15),
        streamsPerAddress: Int = GatewayConfiguration.defaultStreamsPerClient, openStreams: Gauge? = nil,
        clock: any Clock<Duration> = ContinuousClock()
    ) {
        self.clock = clock
        self.locations = locations
        self.cache = cache
        self.logger = logger
        self.heartbeatInterval = heartbeatInterval
        self.streamsPerAddress = streamsPerAddress
        self.openStreams = openStreams
    }

    /// Hands `stream`, from a client at `address` and served on `loop`, what happens from now on, until
    /// `unsubscribe` (or `end` when the gateway shuts down). Nil when that address already has
    /// `streamsPerAddress` streams open.
    func subscribe(_ stream: any LiveStream, address: String?, on loop: any EventLoop) -> UInt64? {
        let id = nextID.add(1, ordering: .relaxed).newValue
        let joined: (LoopStreams, Int)? = subscribers.withLock { subscribers in
            if let address {
                let open = subscribers.perAddress[address, default: 0]
                guard open < streamsPerAddress else { return nil }
                subscribers.perAddress[address] = open + 1
            }
            subscribers.members[id] = address
            let key = ObjectIdentifier(loop)
            let group = subscribers.loops[key] ?? LoopStreams(loop: loop)
            subscribers.loops[key] = group
            return (group, subscribers.members.count)
        }
        guard let (group, count) = joined else { return nil }
        openStreams?.set(Double(count))
        group.onLoop { $0.add(id, stream) }
        return id
    }

    /// Lets a stream go; once is enough, more is harmless.
    func unsubscribe(_ id: UInt64, on loop: any EventLoop) {
        let left: (LoopStreams?, Int)? = subscribers.withLock { subscribers in
            guard let address = subscribers.members.removeValue(forKey: id) else { return nil }
            if let address {
                let open = subscribers.perAddress[address, default: 1] - 1
                subscribers.perAddress[address] = open > 0 ? open : nil
            }
            return (subscribers.loops[ObjectIdentifier(loop)], subscribers.members.count)
        }
        guard let (group, count) = left else { return }
        openStreams?.set(Double(count))
        group?.onLoop { $0.remove(id) }
    }

    var subscriberCount: Int { subscribers.withLock { $0.members.count } }

    /// One hop to each event loop, which hands the message to the streams it serves.
    private func broadcast(_ message: Message) {
        for group in subscribers.withLock({ Array($0.loops.values) }) {
            group.loop.execute { group.deliver(message) }
        }
    }

    /// Changes a stream may hold for its client: queued for the router's response body, or held back while
    /// the stream reads what its client missed. One that falls further behind (a client that reads too
    /// slowly, or a crowd the gateway cannot serve as fast as pins come) is ended: its client reconnects
    /// with the last id it got and reads the rest from the log. (A stream served before the router holds
    /// nothing itself: its connection's high-water mark bounds it.) Without a bound, a stream that falls
    /// behind holds every change its client has not read, and a crowd of them grows the gateway without end.
    static let backlogLimit = 256

    func run() async throws {
        await withDiscardingTaskGroup { group in
            group.addTask { await cancelWhenGracefulShutdown { await self.follow() } }
            group.addTask {
                await cancelWhenGracefulShutdown {
                    while (try? await self.clock.sleep(for: self.heartbeatInterval)) != nil { self.broadcast(.heartbeat) }
                }
            }
        }
        // Live streams end with the gateway, so shutdown is not held up by open connections. The server's
        // run does not wait for the streams served before the router, which hold their connections without
        // a task: the feed waits for those to close (each within `PreparedStream.finishingLimit`).
        let ended = subscribers.withLock { Array($0.loops.values) }.map { group in group.loop.flatSubmit { group.endAll() } }
        for closed in ended { try? await closed.get() }
    }

    static let coalescing = Duration.milliseconds(50)

    private func follow() async {
        // The position followed from; nil until the head's is known.
        var cursor: LogPosition?
        var pause = Duration.milliseconds(200)
        while !Task.isCancelled {
            do {
                // A position of its own rather than the head, which moves: a stretch can then be read again.
                // From there on every change is seen, so the cached list can be trusted at once rather than
                // after the first wait (up to 5 s on a quiet log): a list fetched before now is not kept,
                // since trusting it drops what was cached and what is being fetched.
                if cursor == nil {
                    cursor = try await locations.changes(after: nil, wait: 0, events: false, requestID: "live-feed").position
                    cache.setFollowing(true)
                }
                // With no live stream open, nobody needs the changes themselves, only to know that the log
                // moved: the service then answers with the head's cursor alone.
                let listening = subscriberCount > 0
                // The wait stays below the HTTP client's read timeout (10 s), so a quiet log is not an error.
                let page = try await locations.changes(after: cursor, wait: 5, events: listening, requestID: "live-feed")
                let moved = page.position != cursor
                if moved { cache.invalidate() }
                // Only once the feed has caught up can the cached list be trusted.
                cache.setFollowing(true)
                // A stream opened during a read without changes reads the same stretch again, with them.
                if !listening, subscriberCount > 0 { continue }
                for event in page.events {
                    guard let position = LogPosition(event.id) else { continue }
                    broadcast(.change(position, frame: LiveFrame(SSEFrame.event(event))))
                }
                cursor = page.position
                pause = .milliseconds(200)
                // While the log moves fast, read it at most every 50 ms, in bigger pages, instead of once
                // per append: each read costs both services a query and a round trip.
                if moved { try? await clock.sleep(for: Self.coalescing) }
            } catch {
                cache.setFollowing(false)
                if Task.isCancelled { return }
                logger.warning("live feed lost locations-service; retrying", metadata: ["error": "\(String(reflecting: error))"])
                try? await clock.sleep(for: pause)
                pause = min(pause * 2, .seconds(5))
            }
        }
    }
}
