import Logging
import NIOCore
import OnTheMapShared
import ServiceLifecycle
import Synchronization

/// The class maps' changes, followed with one long poll of locations-service's class-map feed
/// (`maps=class`) however many maps there are: each map that moved has its copy at the gateway dropped
/// (`ClassMapLists`), and each change is framed once and sent to its own map's live streams alone
/// (`LiveFanout`), with a heartbeat. A map's streams are held only while it has one open: a map nobody
/// listens to costs the gateway nothing.
final class MapFeeds: Service, Sendable {
    private struct State {
        var fanouts: [MapSlug: LiveFanout] = [:]
        var ended = false
    }

    /// The live streams of one map, as its `EventsController` subscribes them.
    struct Listeners: LiveSubscriptions {
        let feeds: MapFeeds
        let slug: MapSlug
        var streamsPerAddress: Int { feeds.streamsPerAddress }

        func subscribe(_ stream: any LiveStream, address: String?, on loop: any EventLoop) -> UInt64? {
            feeds.subscribe(stream, to: slug, address: address, on: loop)
        }

        func unsubscribe(_ id: UInt64, on loop: any EventLoop) { feeds.unsubscribe(id, from: slug, on: loop) }
    }

    let lists: ClassMapLists
    let streamsPerAddress: Int
    private let locations: LocationsClient
    private let logger: Logger
    private let heartbeatInterval: Duration
    private let clock: any Clock<Duration>
    private let state = Mutex(State())

    init(
        locations: LocationsClient, lists: ClassMapLists, logger: Logger, heartbeatInterval: Duration = .seconds(15),
        streamsPerAddress: Int = GatewayConfiguration.defaultStreamsPerClient, clock: any Clock<Duration> = ContinuousClock()
    ) {
        self.locations = locations
        self.lists = lists
        self.logger = logger
        self.heartbeatInterval = heartbeatInterval
        self.streamsPerAddress = streamsPerAddress
        self.clock = clock
    }

    func listeners(of slug: MapSlug) -> Listeners { Listeners(feeds: self, slug: slug) }

    private var listening: Bool { state.withLock { !$0.fanouts.isEmpty } }

    // The map's streams are found or made, and the stream joins them, under one lock, as the last stream's
    // leaving drops them: a stream never joins streams that were just dropped.
    private func subscribe(_ stream: any LiveStream, to slug: MapSlug, address: String?, on loop: any EventLoop) -> UInt64? {
        state.withLock { state in
            guard !state.ended else { return nil }
            let fanout = state.fanouts[slug] ?? LiveFanout(streamsPerAddress: streamsPerAddress)
            guard let id = fanout.subscribe(stream, address: address, on: loop) else { return nil }
            state.fanouts[slug] = fanout
            return id
        }
    }

    private func unsubscribe(_ id: UInt64, from slug: MapSlug, on loop: any EventLoop) {
        state.withLock { state in
            guard let fanout = state.fanouts[slug] else { return }
            fanout.unsubscribe(id, on: loop)
            if fanout.subscriberCount == 0 { state.fanouts[slug] = nil }
        }
    }

    private func fanout(_ slug: MapSlug) -> LiveFanout? { state.withLock { $0.fanouts[slug] } }

    func run() async {
        await withDiscardingTaskGroup { group in
            group.addTask { await cancelWhenGracefulShutdown { await self.follow() } }
            group.addTask {
                await cancelWhenGracefulShutdown {
                    while (try? await self.clock.sleep(for: self.heartbeatInterval)) != nil {
                        for fanout in self.state.withLock({ Array($0.fanouts.values) }) { fanout.broadcast(.heartbeat) }
                    }
                }
            }
        }
        // Live streams end with the gateway (as the default map's, `LiveFeed.run`).
        let fanouts = state.withLock { state in
            state.ended = true
            defer { state.fanouts = [:] }
            return Array(state.fanouts.values)
        }
        for fanout in fanouts { await fanout.endAll() }
    }

    private func follow() async {
        await followChanges(
            "class maps' feed", logger: logger, clock: clock,
            read: { after, wait, events in
                try await locations.changes(after: after, wait: wait, events: events, classMaps: true, requestID: "map-feeds")
            },
            listening: { listening }, following: lists.setFollowing,
            moved: { page, _ in
                for map in page.maps {
                    if let slug = MapSlug(map) { lists.invalidate(slug) }
                }
            },
            deliver: { page in
                for event in page.events {
                    guard let map = event.map, let slug = MapSlug(map), let position = LogPosition(event.id), let fanout = fanout(slug) else {
                        continue
                    }
                    fanout.broadcast(.change(position, frame: LiveFrame(SSEFrame.event(event))))
                }
            })
    }
}
