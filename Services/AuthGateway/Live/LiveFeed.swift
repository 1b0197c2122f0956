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
final class LiveFeed: Service, LiveSubscriptions {
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
    /// The streams it feeds.
    let fanout: LiveFanout
    var streamsPerAddress: Int { fanout.streamsPerAddress }

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
        fanout = LiveFanout(streamsPerAddress: streamsPerAddress, openStreams: openStreams)
    }

    /// Hands `stream`, from a client at `address` and served on `loop`, what happens from now on, until
    /// `unsubscribe` (or the end of the feed when the gateway shuts down). Nil when that address already has
    /// `streamsPerAddress` streams open.
    func subscribe(_ stream: any LiveStream, address: String?, on loop: any EventLoop) -> UInt64? {
        fanout.subscribe(stream, address: address, on: loop)
    }

    func unsubscribe(_ id: UInt64, on loop: any EventLoop) { fanout.unsubscribe(id, on: loop) }

    var subscriberCount: Int { fanout.subscriberCount }

    private func broadcast(_ message: Message) { fanout.broadcast(message) }

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
        await fanout.endAll()
    }

    static let coalescing = Duration.milliseconds(50)

    private func follow() async {
        await followChanges(
            "live feed", logger: logger, clock: clock,
            read: { after, wait, events in try await locations.changes(after: after, wait: wait, events: events, requestID: "live-feed") },
            listening: { subscriberCount > 0 }, following: cache.setFollowing,
            moved: { _, moved in if moved { cache.invalidate() } },
            deliver: { page in
                for event in page.events {
                    guard let position = LogPosition(event.id) else { continue }
                    broadcast(.change(position, frame: LiveFrame(SSEFrame.event(event))))
                }
            })
    }
}

/// Follows a change feed of locations-service until cancelled, as the default map's feed and the class
/// maps' do: from the head of the log on, one long poll after another, each page's moves told (`moved`, with
/// whether the cursor moved) before what was cached is trusted again (`following`), and its changes handed
/// over (`deliver`) to whoever listens. After a failure nothing cached is trusted, and the feed tries again
/// after a pause that doubles from 200 ms up to 5 s.
func followChanges(
    _ name: String, logger: Logger, clock: any Clock<Duration>,
    read: (_ after: LogPosition?, _ wait: Int, _ events: Bool) async throws -> LocationChangePage,
    listening: () -> Bool, following: (Bool) -> Void,
    moved: (LocationChangePage, Bool) -> Void, deliver: (LocationChangePage) -> Void
) async {
    // The position followed from; nil until the head's is known.
    var cursor: LogPosition?
    var pause = Duration.milliseconds(200)
    while !Task.isCancelled {
        do {
            // A position of its own rather than the head, which moves: a stretch can then be read again.
            // From there on every change is seen, so what is cached can be trusted at once rather than
            // after the first wait (up to 5 s on a quiet log): what was fetched before now is not kept,
            // since trusting it drops what was cached and what is being fetched.
            if cursor == nil {
                cursor = try await read(nil, 0, false).position
                following(true)
            }
            // With no live stream open, nobody needs the changes themselves, only to know that the log
            // moved: the service then answers without them.
            let listened = listening()
            // The wait stays below the HTTP client's read timeout (10 s), so a quiet log is not an error.
            let page = try await read(cursor, 5, listened)
            let hasMoved = page.position != cursor
            moved(page, hasMoved)
            // Only once the feed has caught up can what is cached be trusted.
            following(true)
            // A stream opened during a read without changes reads the same stretch again, with them.
            if !listened, listening() { continue }
            deliver(page)
            cursor = page.position
            pause = .milliseconds(200)
            // While the log moves fast, read it at most every 50 ms, in bigger pages, instead of once
            // per append: each read costs both services a query and a round trip.
            if hasMoved { try? await clock.sleep(for: LiveFeed.coalescing) }
        } catch {
            following(false)
            if Task.isCancelled { return }
            logger.warning("\(name) lost locations-service; retrying", metadata: ["error": "\(String(reflecting: error))"])
            try? await clock.sleep(for: pause)
            pause = min(pause * 2, .seconds(5))
        }
    }
}
