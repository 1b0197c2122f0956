import Logging
import OnTheMapShared
import ServiceLifecycle
import Synchronization

/// The live feeds of class maps: one `LiveFeed` per map with someone listening, each following only its
/// map's changes (`/maps/{slug}/v1/StudentLocation/changes`), so a change on one map is framed and sent to
/// that map's streams alone. At most `capacity` (`MAP_LIVE_FEEDS`) are followed at once: past it, the
/// least recently opened feed with no stream open is stopped.
final class MapFeeds: Service, Sendable {
    private struct Followed {
        let feed: LiveFeed
        let task: Task<Void, Never>
        var lastOpened: UInt64
    }

    private struct State {
        var feeds: [MapSlug: Followed] = [:]
        var clock: UInt64 = 0
        var stopped = false
    }

    let capacity: Int
    private let state = Mutex(State())
    private let makeFeed: @Sendable (MapSlug) -> LiveFeed

    init(capacity: Int, makeFeed: @escaping @Sendable (MapSlug) -> LiveFeed) {
        self.capacity = max(capacity, 1)
        self.makeFeed = makeFeed
    }

    /// The map's feed, followed from now on if it was not.
    func feed(for slug: MapSlug) -> LiveFeed {
        let (feed, idle): (LiveFeed, [Task<Void, Never>]) = state.withLock { state in
            state.clock &+= 1
            if var followed = state.feeds[slug] {
                followed.lastOpened = state.clock
                state.feeds[slug] = followed
                return (followed.feed, [])
            }
            let feed = makeFeed(slug)
            let task = Task { _ = try? await feed.run() }
            state.feeds[slug] = Followed(feed: feed, task: task, lastOpened: state.clock)
            var stopped: [Task<Void, Never>] = []
            // Over the cap: the idle feeds go, oldest first, until it holds again (or none is idle).
            let idle = state.feeds.filter { $0.value.feed.subscriberCount == 0 && $0.key != slug }.sorted {
                $0.value.lastOpened < $1.value.lastOpened
            }
            for (key, followed) in idle.prefix(max(state.feeds.count - capacity, 0)) {
                state.feeds[key] = nil
                stopped.append(followed.task)
            }
            return (feed, stopped)
        }
        for task in idle { task.cancel() }
        return feed
    }

    /// How many maps' feeds are followed.
    var count: Int { state.withLock { $0.feeds.count } }

    /// Until shutdown; then every map's feed ends, and with it its streams.
    func run() async {
        try? await gracefulShutdown()
        let tasks = state.withLock { state in
            state.stopped = true
            defer { state.feeds = [:] }
            return state.feeds.values.map(\.task)
        }
        for task in tasks { task.cancel() }
        for task in tasks { await task.value }
    }
}
