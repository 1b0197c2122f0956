import NIOCore
import OnTheMapShared
import ServiceKit
import Synchronization
import Testing

@testable import LocationsService

/// The hot read's cache, against a load that the test holds and releases: readers that find the list
/// stale share one build, a write during a build is not hidden by it, a failed build reaches its readers
/// and the next read tries again, and a stopped cache refuses instead of leaving a reader waiting.
@Suite struct LatestLocationsCacheTests {
    /// A load that counts its calls, names the list after the call ("Place 1", "Place 2"...), waits for
    /// the test to release each call, and fails the calls the test says should.
    final class HeldLoad: Sendable {
        private let calls = Mutex(0)
        private let releases = AsyncStream.makeStream(of: (any Error)?.self)
        private let started = AsyncStream.makeStream(of: Int.self)

        var count: Int { calls.withLock { $0 } }

        /// Lets the waiting (or next) call finish, with a list or with an error.
        func release(failing: Bool = false) { releases.continuation.yield(failing ? LoadFailed() : nil) }

        /// Lets the waiting (or next) call fail with `error`.
        func release(throwing error: any Error) { releases.continuation.yield(error) }

        /// Waits until the next call has begun.
        func nextStart() async -> Int? {
            var iterator = started.stream.makeAsyncIterator()
            return await iterator.next()
        }

        func load() async throws -> [StudentLocation] {
            let call = calls.withLock {
                $0 += 1
                return $0
            }
            started.continuation.yield(call)
            var iterator = releases.stream.makeAsyncIterator()
            guard let outcome = await iterator.next() else { throw CancellationError() }
            if let error = outcome { throw error }
            let now = Timestamp.now()
            return [
                StudentLocation(
                    objectId: ObjectID("CDHfAy8sdp"), uniqueKey: "1", firstName: "Ada", lastName: "Lovelace", mapString: "Place \(call)",
                    mediaURL: "https://example.com", latitude: 0, longitude: 0, createdAt: now, updatedAt: now)
            ]
        }
    }

    struct LoadFailed: Error {}

    static func withRunningCache(
        _ held: HeldLoad, coherent: Bool = true, _ body: @Sendable (LatestLocationsCache) async throws -> Void
    ) async throws {
        let cache = LatestLocationsCache { try await held.load() }
        cache.setCoherent(coherent)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await cache.run() }
            defer { group.cancelAll() }
            try await body(cache)
        }
    }

    static func place(_ list: CachedJSON) -> String? {
        String(buffer: list.body).split(separator: "\"").drop { $0 != "mapString" }.dropFirst(2).first.map(String.init)
    }

    @Test func readersOfAStaleListShareOneBuildAndThenHitTheCache() async throws {
        let held = HeldLoad()
        try await Self.withRunningCache(held) { (cache: LatestLocationsCache) async throws in
            let readers = (0..<20).map { _ in Task { try await cache.current() } }
            #expect(await held.nextStart() == 1)
            while cache.waitingCount < readers.count { await Task.yield() }
            held.release()
            for reader in readers { #expect(try await Self.place(reader.value) == "Place 1") }
            #expect(cache.ready.flatMap(Self.place) == "Place 1")
            #expect(try await Self.place(cache.current()) == "Place 1")
            #expect(held.count == 1)
        }
    }

    @Test func aWriteDuringABuildIsNotHiddenByIt() async throws {
        let held = HeldLoad()
        try await Self.withRunningCache(held) { (cache: LatestLocationsCache) async throws in
            let before = Task { try await cache.current() }
            #expect(await held.nextStart() == 1)
            cache.invalidate()  // a write lands while the first build reads
            let after = Task { try await cache.current() }
            while cache.waitingCount < 2 { await Task.yield() }
            held.release()
            #expect(try await Self.place(before.value) == "Place 1")
            #expect(await held.nextStart() == 2)
            held.release()
            #expect(try await Self.place(after.value) == "Place 2", "the reader after the write waits for a build that includes it")
            #expect(held.count == 2)
        }
    }

    @Test func aFailedBuildReachesItsReadersAndTheNextReadTriesAgain() async throws {
        let held = HeldLoad()
        try await Self.withRunningCache(held) { (cache: LatestLocationsCache) async throws in
            let failing = Task { try await cache.current() }
            #expect(await held.nextStart() == 1)
            held.release(failing: true)
            await #expect(throws: LoadFailed.self) { try await failing.value }
            #expect(cache.ready == nil)
            held.release()
            #expect(try await Self.place(cache.current()) == "Place 2")
        }
    }

    @Test func aBuildTheDatabaseFailedToAnswerFailsTheReadersOfNewerListsTooWithoutAnotherWait() async throws {
        let held = HeldLoad()
        try await Self.withRunningCache(held) { (cache: LatestLocationsCache) async throws in
            let before = Task { try await cache.current() }
            #expect(await held.nextStart() == 1)
            cache.setCoherent(false)  // the database goes away: the change listener drops with it
            let after = Task { try await cache.current() }
            while cache.waitingCount < 2 { await Task.yield() }
            held.release(throwing: DeadlineExceeded())
            await #expect(throws: DeadlineExceeded.self) { try await before.value }
            // Both readers were answered by the one build: nobody waits for a second.
            let stillWaiting = cache.waitingCount
            #expect(stillWaiting == 0, "the reader of the newer list was left waiting for another build")
            if stillWaiting > 0 { held.release(throwing: DeadlineExceeded()) }
            await #expect(throws: DeadlineExceeded.self) { try await after.value }
        }
    }

    @Test func withoutChangeNotificationsEveryReadBuildsAgain() async throws {
        let held = HeldLoad()
        try await Self.withRunningCache(held, coherent: false) { (cache: LatestLocationsCache) async throws in
            held.release()
            held.release()
            #expect(try await Self.place(cache.current()) == "Place 1")
            #expect(cache.ready == nil)
            #expect(try await Self.place(cache.current()) == "Place 2")
        }
    }

    @Test func aStoppedCacheRefusesAStaleReadAtOnce() async throws {
        let cache = LatestLocationsCache { [] }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await cache.run() }
            group.cancelAll()
        }
        await #expect(throws: ServiceStopping()) { try await cache.current() }
    }
}
