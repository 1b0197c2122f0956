import HTTPTypes
import NIOCore
import NIOHTTP1
import NIOPosix
import OnTheMapShared
import ServiceKit
import Synchronization
import TestSupport
import Testing

@testable import AuthGateway
@testable import ServiceTwins

/// The feed's timing on a clock the test steps, over locations-service's router in memory: the heartbeat
/// comes once per interval of that clock, and changes that come while the feed pauses after a change are
/// read together when the pause ends.
@Suite struct LiveFeedTests {
    /// A stream that records what the feed hands it.
    final class Recording: LiveStream, @unchecked Sendable {
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        private let messages = Mutex<[LiveFeed.Message]>([])

        var heartbeats: Int { messages.withLock { $0.count { if case .heartbeat = $0 { true } else { false } } } }
        var changes: Int { messages.withLock { $0.count { if case .change = $0 { true } else { false } } } }

        func deliver(_ message: LiveFeed.Message) { messages.withLock { $0.append(message) } }
        func end() -> EventLoopFuture<Void> { loop.makeSucceededVoidFuture() }
    }

    /// The hop to the service, counting the reads of the change feed.
    final class Counting: LocationsHop {
        let locations: MemoryLocations
        let feedReads = Atomic<Int>(0)

        init(locations: MemoryLocations) { self.locations = locations }

        func execute(
            method: HTTPMethod, target: String, headers: HTTPFields, body: ByteBuffer?, timeout: TimeAmount, on eventLoop: (any EventLoop)?
        ) -> EventLoopFuture<HopAnswer> {
            if target.contains("/changes") { feedReads.add(1, ordering: .relaxed) }
            return locations.execute(method: method, target: target, headers: headers, body: body, timeout: timeout, on: eventLoop)
        }
    }

    /// A feed on `clock` with one recording stream subscribed, running for `body`; `cache` is the latest list's.
    static func withFeed(
        clock: SteppingClock, cache: LatestListCache = LatestListCache(), _ body: (Recording, LocationsClient, Counting) async throws -> Void
    ) async throws {
        try await withMemoryLocations { locations in
            let hop = Counting(locations: locations)
            let client = LocationsClient(internalToken: TestDatabase.internalToken, http: hop, timeout: .seconds(5), logger: TestDatabase.logger)
            let feed = LiveFeed(
                locations: client, cache: cache, logger: TestDatabase.logger, heartbeatInterval: .seconds(15), clock: clock)
            let stream = Recording()
            _ = feed.subscribe(stream, address: nil, on: stream.loop)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await feed.run() }
                defer { group.cancelAll() }
                try await body(stream, client, hop)
            }
        }
    }

    /// Posts a pin through the service's router, as the gateway forwards one.
    static func post(_ place: String, with client: LocationsClient) async throws {
        let amara = Actor(key: "5550001111", firstName: "Amara", lastName: "Nwosu")
        let pin = LocationInput(mapString: place, mediaURL: "https://example.com", latitude: 6.5, longitude: 3.4)
        let answer = try await client.send(
            method: .POST, path: "/v1/StudentLocation", query: nil, headers: [.contentType: "application/json"], body: pin.json,
            actor: amara, requestID: "live-feed-test")
        #expect(answer.status == 200, "the v1 path answers a new pin 200")
    }

    @Test func aQuietFeedBeatsOncePerIntervalOfItsClock() async throws {
        let clock = SteppingClock()
        try await Self.withFeed(clock: clock) { stream, _, _ in
            let asleep = try await waitFor(within: .seconds(5)) { clock.sleeping >= 1 }
            #expect(asleep != nil, "the heartbeat sleeps on the clock")
            // Just short of the interval nothing is due; each interval then brings exactly one beat.
            clock.advance(by: .seconds(15) - .milliseconds(1))
            for beats in 1...3 {
                clock.advance(by: beats == 1 ? .milliseconds(1) : .seconds(15))
                let beat = try await waitFor(within: .seconds(5)) { stream.heartbeats >= beats }
                #expect(beat != nil)
                #expect(stream.heartbeats == beats)
            }
        }
    }

    @Test func theCachedListIsTrustedOnceTheFeedKnowsWhereTheLogStandsNotAfterItsFirstWait() async throws {
        let cache = LatestListCache()
        try await Self.withFeed(clock: SteppingClock(), cache: cache) { _, _, hop in
            // The first read finds the log's head; the second waits on a quiet log for up to 5 s.
            let waiting = try await waitFor(within: .seconds(5)) { hop.feedReads.load(ordering: .relaxed) >= 2 }
            #expect(waiting != nil)
            let list = CachedJSON(body: ByteBuffer(string: #"{"results":[]}"#), etag: #""empty""#)
            cache.store(list, fetchedAt: cache.generation)
            #expect(cache.current != nil, "the list is served from the cache while the feed waits")
            #expect(hop.feedReads.load(ordering: .relaxed) == 2, "the second read has not come back yet")
        }
    }

    @Test func changesThatComeDuringThePauseAfterAChangeAreReadTogetherWhenItEnds() async throws {
        let clock = SteppingClock()
        try await Self.withFeed(clock: clock) { stream, client, hop in
            let following = try await waitFor(within: .seconds(5)) { hop.feedReads.load(ordering: .relaxed) >= 2 }
            #expect(following != nil, "the feed reads the change feed")
            try await Self.post("Lagos", with: client)
            let first = try await waitFor(within: .seconds(5)) { stream.changes == 1 }
            #expect(first != nil)
            // Asleep on the clock: the heartbeat, and the pause after a change.
            let paused = try await waitFor(within: .seconds(5)) { clock.sleeping == 2 }
            #expect(paused != nil, "the feed pauses on the clock after a change")
            let reads = hop.feedReads.load(ordering: .relaxed)
            try await Self.post("Abuja", with: client)
            try await Self.post("Accra", with: client)
            clock.advance(by: LiveFeed.coalescing)
            let both = try await waitFor(within: .seconds(5)) { stream.changes == 3 }
            #expect(both != nil)
            #expect(hop.feedReads.load(ordering: .relaxed) == reads + 1, "one read brought both changes")
        }
    }
}
