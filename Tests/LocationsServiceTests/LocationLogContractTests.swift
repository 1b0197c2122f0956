import Foundation
import OnTheMapShared
import PostgresNIO
import ServiceKit
import TestSupport
import Testing

@testable import LocationsService
@testable import ServiceTwins

/// The two logs: the service's, in PostgreSQL, and the one in memory behind the router-level tests.
enum LocationLogKind: String, CaseIterable, Sendable {
    case memory, postgres
}

/// The appends that name the version they expect the pin's stream to be at.
enum VersionedAppend: String, CaseIterable, Sendable {
    case update, delete, hide, unhide
}

/// What `LocationLog` promises, asked of both logs alike: every rule the store decides (versions,
/// idempotency keys, the cap on pins per student, hides, the map at a moment, erasure, what followers read)
/// as a reader sees it. The router-level tests trust the memory log to answer as PostgreSQL does; these tests
/// are what that trust rests on.
///
/// Every time an event carries is explicit, a few seconds apart in the past, so the moments of the map are
/// known; an unhide alone takes its moment from when the log recorded it.
@Suite struct LocationLogContractTests {
    /// Small, so that a few posts reach it.
    static let pinsPerStudent = 2

    static let jarrod = TestActors.jarrod
    static let amara = TestActors.amara
    static let moderator = Actor(key: "operator", firstName: "On", lastName: "Call")

    static let start = Timestamp(iso8601: "2025-06-01T12:00:00.000Z")!

    /// `seconds` after `start`.
    static func time(_ seconds: Int64) -> Timestamp { start.advanced(by: seconds * 1000) }

    /// A well-formed id that sorts by `number`.
    static func id(_ number: Int) -> ObjectID {
        let digits = String(number)
        return ObjectID("P" + String(repeating: "0", count: 9 - digits.count) + digits)
    }

    /// Pin `number`, posted by `student` at `seconds`.
    static func pin(
        _ number: Int, by student: Actor = jarrod, at seconds: Int64, mapString: String = "Lagos, Nigeria", latitude: Double = 6.45
    ) -> StudentLocation {
        StudentLocation(
            objectId: id(number), uniqueKey: student.key, firstName: student.firstName, lastName: student.lastName, mapString: mapString,
            mediaURL: "https://a.example", latitude: latitude, longitude: 3.39, createdAt: time(seconds), updatedAt: time(seconds))
    }

    /// `location` moved to `mapString` at `seconds`.
    static func moved(_ location: StudentLocation, to mapString: String, at seconds: Int64) -> StudentLocation {
        var moved = location
        moved.mapString = mapString
        moved.updatedAt = time(seconds)
        return moved
    }

    static func by(_ actor: Actor, key: String? = nil, hash: String? = nil) -> EventMetadata {
        EventMetadata(actor: actor, idempotencyKey: key, requestHash: hash)
    }

    static func deletion(of location: StudentLocation, at seconds: Int64) -> LocationDeleted {
        LocationDeleted(objectId: location.objectId, uniqueKey: location.uniqueKey, deletedAt: time(seconds))
    }

    /// A pin's life up to its unhide: posted at 1 s, moved at 2 s, hidden at 3 s, unhidden (versions 1 to 4).
    static func postMoveHideAndUnhide(on log: any LocationLog) async throws -> (posted: StudentLocation, moved: StudentLocation) {
        let posted = pin(1, at: 1)
        let moved = Self.moved(posted, to: "Abuja, Nigeria", at: 2)
        _ = try await log.appendPosted(posted, metadata: by(jarrod))
        _ = try await log.appendUpdated(moved, expectedVersion: 1, metadata: by(jarrod))
        _ = try await log.appendHidden(hiding(moved, at: 3), expectedVersion: 2, metadata: by(moderator))
        _ = try await log.appendUnhidden(moved, expectedVersion: 3, metadata: by(moderator))
        return (posted, moved)
    }

    static func hiding(_ location: StudentLocation, at seconds: Int64) -> LocationHidden {
        LocationHidden(objectId: location.objectId, uniqueKey: location.uniqueKey, reason: "spam", hiddenAt: time(seconds))
    }

    /// A fresh log of `kind`, each student allowed `pinsPerStudent` pins: in PostgreSQL, a new database with
    /// the service's schema and its group commit running.
    static func withLog(_ kind: LocationLogKind, _ body: @escaping @Sendable (any LocationLog) async throws -> Void) async throws {
        switch kind {
        case .memory:
            try await body(MemoryLocationLog(pinsPerStudent: pinsPerStudent))
        case .postgres:
            let database = try await TestDatabase.create()
            try await database.withClient { client in
                try await PinCap.configure(pinsPerStudent, on: client, logger: TestDatabase.logger)
                try await LocationCommandsHarness.withLog(client) { log in try await body(log) }
            }
        }
    }

    /// Waits until followers may read through `position`. PostgreSQL shows them an event only once no older
    /// transaction anywhere on the cluster can still commit, and other suites' transactions on the shared
    /// test cluster may be open a while.
    static func readable(_ log: any LocationLog, through position: LogPosition) async throws {
        let waited = try await waitFor(within: .seconds(30)) { try await log.head() >= position }
        try #require(waited != nil, "followers never came to \(position)")
    }

    /// The map at `moment`, newest first.
    static func map(_ log: any LocationLog, at moment: Timestamp) async throws -> [StudentLocation] {
        try await log.pins(PinQuery(at: moment))
    }

    // MARK: Appends

    @Test(arguments: LocationLogKind.allCases)
    func aPostThenUpdatesAtTheExpectedVersionEachMoveThePinOneVersionOn(_ kind: LocationLogKind) async throws {
        try await Self.withLog(kind) { log in
            let posted = Self.pin(1, at: 1)
            _ = try await log.appendPosted(posted, metadata: Self.by(Self.jarrod))
            #expect(try await log.pin(posted.objectId) == ReadModel.Pin(location: posted, version: 1))
            let moved = Self.moved(posted, to: "Abuja, Nigeria", at: 2)
            _ = try await log.appendUpdated(moved, expectedVersion: 1, metadata: Self.by(Self.jarrod))
            let movedAgain = Self.moved(moved, to: "Accra, Ghana", at: 3)
            _ = try await log.appendUpdated(movedAgain, expectedVersion: 2, metadata: Self.by(Self.jarrod))

            #expect(try await log.pin(posted.objectId) == ReadModel.Pin(location: movedAgain, version: 3))
            #expect(try await log.pins(PinQuery()) == [movedAgain])
            #expect(
                try await log.stream(posted.objectId).map(\.told) == [
                    Told(.posted, 1, .upserted(posted)), Told(.updated, 2, .upserted(moved)), Told(.updated, 3, .upserted(movedAgain)),
                ])
        }
    }

    /// Another writer got there first: the append is refused and nothing of it is seen.
    @Test(arguments: LocationLogKind.allCases, VersionedAppend.allCases)
    func anAppendAtAStaleVersionIsAVersionConflict(_ kind: LocationLogKind, _ append: VersionedAppend) async throws {
        try await Self.withLog(kind) { log in
            let version = try await Self.pinReady(for: append, in: log)
            await #expect(throws: EventStore.AppendError.versionConflict) {
                try await Self.perform(append, on: log, expectedVersion: version - 1)
            }
            try await Self.expectNothingAppended(to: log, pinAt: version, for: append)
            // At the stream's own version the same append is taken.
            try await Self.perform(append, on: log, expectedVersion: version)
            #expect(try await log.stream(Self.id(1)).last?.streamVersion == version + 1)
        }
    }

    /// A version the stream has not reached is no more the pin's than an old one: taking it would leave a gap
    /// in the stream's versions.
    @Test(arguments: LocationLogKind.allCases, VersionedAppend.allCases)
    func anAppendAheadOfTheStreamIsAVersionConflict(_ kind: LocationLogKind, _ append: VersionedAppend) async throws {
        try await Self.withLog(kind) { log in
            let version = try await Self.pinReady(for: append, in: log)
            await #expect(throws: EventStore.AppendError.versionConflict) {
                try await Self.perform(append, on: log, expectedVersion: version + 1)
            }
            try await Self.expectNothingAppended(to: log, pinAt: version, for: append)
        }
    }

    /// Pin 1 posted and moved (and hidden, for an unhide): answers its stream's version.
    static func pinReady(for append: VersionedAppend, in log: any LocationLog) async throws -> Int {
        let posted = pin(1, at: 1)
        _ = try await log.appendPosted(posted, metadata: by(jarrod))
        _ = try await log.appendUpdated(moved(posted, to: "Abuja, Nigeria", at: 2), expectedVersion: 1, metadata: by(jarrod))
        guard append == .unhide else { return 2 }
        _ = try await log.appendHidden(hiding(posted, at: 3), expectedVersion: 2, metadata: by(moderator))
        return 3
    }

    static func perform(_ append: VersionedAppend, on log: any LocationLog, expectedVersion: Int) async throws {
        let current = moved(pin(1, at: 1), to: "Abuja, Nigeria", at: 2)
        switch append {
        case .update:
            _ = try await log.appendUpdated(moved(current, to: "Accra, Ghana", at: 4), expectedVersion: expectedVersion, metadata: by(jarrod))
        case .delete:
            _ = try await log.appendDeleted(deletion(of: current, at: 4), expectedVersion: expectedVersion, metadata: by(jarrod))
        case .hide:
            _ = try await log.appendHidden(hiding(current, at: 4), expectedVersion: expectedVersion, metadata: by(moderator))
        case .unhide:
            _ = try await log.appendUnhidden(current, expectedVersion: expectedVersion, metadata: by(moderator))
        }
    }

    static func expectNothingAppended(to log: any LocationLog, pinAt version: Int, for append: VersionedAppend) async throws {
        let current = moved(pin(1, at: 1), to: "Abuja, Nigeria", at: 2)
        #expect(try await log.stream(current.objectId).map(\.streamVersion) == Array(1...version))
        let shown = append == .unhide ? nil : ReadModel.Pin(location: current, version: version)
        #expect(try await log.pin(current.objectId) == shown)
        #expect(try await log.pins(PinQuery()) == (shown.map { [$0.location] } ?? []))
    }

    @Test(arguments: LocationLogKind.allCases)
    func aPostWithAnIdempotencyKeyTheActorUsedBeforeIsRefused(_ kind: LocationLogKind) async throws {
        try await Self.withLog(kind) { log in
            let first = Self.pin(1, at: 1)
            _ = try await log.appendPosted(first, metadata: Self.by(Self.jarrod, key: "retry-1", hash: "hash-1"))
            await #expect(throws: EventStore.AppendError.duplicateIdempotencyKey) {
                try await log.appendPosted(Self.pin(2, at: 2), metadata: Self.by(Self.jarrod, key: "retry-1", hash: "hash-2"))
            }
            #expect(try await log.pins(PinQuery()) == [first])
            #expect(try await log.stream(Self.id(2)).isEmpty)
            #expect(try await log.postedEvent(actorKey: Self.jarrod.key, idempotencyKey: "retry-1")?.location == first)
        }
    }

    @Test(arguments: LocationLogKind.allCases)
    func anotherActorMayUseTheSameIdempotencyKey(_ kind: LocationLogKind) async throws {
        try await Self.withLog(kind) { log in
            let (jarrods, amaras) = (Self.pin(1, at: 1), Self.pin(2, by: Self.amara, at: 2))
            _ = try await log.appendPosted(jarrods, metadata: Self.by(Self.jarrod, key: "shared", hash: "hash-1"))
            _ = try await log.appendPosted(amaras, metadata: Self.by(Self.amara, key: "shared", hash: "hash-2"))
            #expect(try await log.pins(PinQuery()) == [amaras, jarrods])
            #expect(try await log.postedEvent(actorKey: Self.amara.key, idempotencyKey: "shared")?.location == amaras)
        }
    }

    /// A retry is answered with the pin its first attempt made, as it was posted, and the hash that tells a
    /// retry from a new request under a reused key.
    @Test(arguments: LocationLogKind.allCases)
    func thePostAnIdempotencyKeyMadeIsFoundWithItsRequestHash(_ kind: LocationLogKind) async throws {
        try await Self.withLog(kind) { log in
            let posted = Self.pin(1, at: 1)
            _ = try await log.appendPosted(posted, metadata: Self.by(Self.jarrod, key: "retry-1", hash: "hash-1"))
            _ = try await log.appendUpdated(Self.moved(posted, to: "Abuja, Nigeria", at: 2), expectedVersion: 1, metadata: Self.by(Self.jarrod))
            _ = try await log.appendPosted(Self.pin(2, at: 3), metadata: Self.by(Self.jarrod, key: "unhashed"))

            let found = try await log.postedEvent(actorKey: Self.jarrod.key, idempotencyKey: "retry-1")
            #expect(found?.location == posted)
            #expect(found?.requestHash == "hash-1")
            let unhashed = try await log.postedEvent(actorKey: Self.jarrod.key, idempotencyKey: "unhashed")
            #expect(unhashed?.location == Self.pin(2, at: 3))
            #expect(unhashed?.requestHash == nil)
            #expect(try await log.postedEvent(actorKey: Self.amara.key, idempotencyKey: "retry-1") == nil, "another actor's key")
            #expect(try await log.postedEvent(actorKey: Self.jarrod.key, idempotencyKey: "never-used") == nil)
        }
    }

    /// A pin's id names one stream for good, even once the pin is deleted; a refused post keeps nothing,
    /// not even its idempotency key.
    @Test(arguments: LocationLogKind.allCases)
    func aPostOfAnIdTheLogAlreadyHoldsIsAVersionConflictAndTakesNoKey(_ kind: LocationLogKind) async throws {
        try await Self.withLog(kind) { log in
            let posted = Self.pin(1, at: 1)
            _ = try await log.appendPosted(posted, metadata: Self.by(Self.jarrod))
            await #expect(throws: EventStore.AppendError.versionConflict) {
                try await log.appendPosted(Self.pin(1, at: 2), metadata: Self.by(Self.jarrod, key: "again"))
            }
            _ = try await log.appendDeleted(Self.deletion(of: posted, at: 3), expectedVersion: 1, metadata: Self.by(Self.jarrod))
            await #expect(throws: EventStore.AppendError.versionConflict) {
                try await log.appendPosted(Self.pin(1, at: 4), metadata: Self.by(Self.jarrod, key: "again"))
            }
            #expect(try await log.stream(posted.objectId).map(\.type) == [.posted, .deleted])
            #expect(try await log.pins(PinQuery()).isEmpty)
            #expect(try await log.postedEvent(actorKey: Self.jarrod.key, idempotencyKey: "again") == nil)
            _ = try await log.appendPosted(Self.pin(2, at: 5), metadata: Self.by(Self.jarrod, key: "again"))
            #expect(try await log.pins(PinQuery()) == [Self.pin(2, at: 5)])
        }
    }

    // MARK: Deletion, hide, unhide

    @Test(arguments: LocationLogKind.allCases)
    func aDeletionTakesThePinOffTheMapAtTheNextVersion(_ kind: LocationLogKind) async throws {
        try await Self.withLog(kind) { log in
            let (posted, other) = (Self.pin(1, at: 1), Self.pin(2, by: Self.amara, at: 2))
            let moved = Self.moved(posted, to: "Abuja, Nigeria", at: 3)
            _ = try await log.appendPosted(posted, metadata: Self.by(Self.jarrod))
            _ = try await log.appendPosted(other, metadata: Self.by(Self.amara))
            _ = try await log.appendUpdated(moved, expectedVersion: 1, metadata: Self.by(Self.jarrod))
            let deletion = Self.deletion(of: moved, at: 4)
            _ = try await log.appendDeleted(deletion, expectedVersion: 2, metadata: Self.by(Self.jarrod))

            #expect(try await log.pin(posted.objectId) == nil)
            #expect(try await log.pins(PinQuery()) == [other])
            #expect(try await log.stream(posted.objectId).last?.told == Told(.deleted, 3, .deleted(deletion)))
        }
    }

    @Test(arguments: LocationLogKind.allCases)
    func aHideTakesThePinOffTheMapAtTheNextVersion(_ kind: LocationLogKind) async throws {
        try await Self.withLog(kind) { log in
            let (posted, other) = (Self.pin(1, at: 1), Self.pin(2, by: Self.amara, at: 2))
            _ = try await log.appendPosted(posted, metadata: Self.by(Self.jarrod))
            _ = try await log.appendPosted(other, metadata: Self.by(Self.amara))
            let hidden = Self.hiding(posted, at: 3)
            _ = try await log.appendHidden(hidden, expectedVersion: 1, metadata: Self.by(Self.moderator))

            #expect(try await log.pin(posted.objectId) == nil)
            #expect(try await log.pins(PinQuery()) == [other])
            // Read back, a hide is the pin's removal at the time it was hidden; its reason is the log's alone.
            #expect(try await log.stream(posted.objectId).last?.told == Told(.hidden, 2, .deleted(hidden.removal)))
        }
    }

    @Test(arguments: LocationLogKind.allCases)
    func anUnhideBringsThePinBackAsItWasAtTheNextVersion(_ kind: LocationLogKind) async throws {
        try await Self.withLog(kind) { log in
            let (posted, moved) = try await Self.postMoveHideAndUnhide(on: log)

            #expect(try await log.pin(posted.objectId) == ReadModel.Pin(location: moved, version: 4))
            #expect(try await log.pins(PinQuery()) == [moved])
            #expect(try await log.stream(posted.objectId).last?.told == Told(.unhidden, 4, .upserted(moved)))
        }
    }

    // MARK: The cap on pins per student

    @Test(arguments: LocationLogKind.allCases)
    func aPostPastTheCapTakesTheStudentsOldestPinOff(_ kind: LocationLogKind) async throws {
        try await Self.withLog(kind) { log in
            let (first, second, third) = (Self.pin(1, at: 1), Self.pin(2, at: 2), Self.pin(4, at: 4))
            let someoneElses = Self.pin(3, by: Self.amara, at: 3)
            for location in [first, second, someoneElses, third] {
                _ = try await log.appendPosted(location, metadata: Self.by(location.uniqueKey == Self.amara.key ? Self.amara : Self.jarrod))
            }
            #expect(try await log.pins(PinQuery(filters: [.uniqueKey: Self.jarrod.key])) == [third, second])
            #expect(try await log.pin(first.objectId) == nil)
            // The pin left the map when the new one arrived, and the log says so in its stream.
            let removal = LocationDeleted(objectId: first.objectId, uniqueKey: Self.jarrod.key, deletedAt: third.createdAt)
            #expect(try await log.stream(first.objectId).map(\.told) == [Told(.posted, 1, .upserted(first)), Told(.deleted, 2, .deleted(removal))])
            #expect(try await log.pins(PinQuery(filters: [.uniqueKey: Self.amara.key])) == [someoneElses], "another student's pins stay")
        }
    }

    /// The oldest is the pin posted first, however recently it changed; its removal follows its last version.
    @Test(arguments: LocationLogKind.allCases)
    func theCapTakesOffThePinPostedFirstNotTheOneChangedLongestAgo(_ kind: LocationLogKind) async throws {
        try await Self.withLog(kind) { log in
            let (first, second, third) = (Self.pin(1, at: 1), Self.pin(2, at: 2), Self.pin(3, at: 4))
            _ = try await log.appendPosted(first, metadata: Self.by(Self.jarrod))
            _ = try await log.appendPosted(second, metadata: Self.by(Self.jarrod))
            _ = try await log.appendUpdated(Self.moved(first, to: "Abuja, Nigeria", at: 3), expectedVersion: 1, metadata: Self.by(Self.jarrod))
            _ = try await log.appendPosted(third, metadata: Self.by(Self.jarrod))

            #expect(try await log.pins(PinQuery()) == [third, second])
            #expect(try await log.stream(first.objectId).map(\.told).last == Told(.deleted, 3, .deleted(Self.deletion(of: first, at: 4))))
        }
    }

    /// Deleted and hidden pins are off the map, so they leave room under the cap.
    @Test(arguments: LocationLogKind.allCases)
    func theCapCountsOnlyThePinsOnTheMap(_ kind: LocationLogKind) async throws {
        try await Self.withLog(kind) { log in
            let (first, second, third, fourth) = (Self.pin(1, at: 1), Self.pin(2, at: 2), Self.pin(3, at: 5), Self.pin(4, at: 6))
            _ = try await log.appendPosted(first, metadata: Self.by(Self.jarrod))
            _ = try await log.appendPosted(second, metadata: Self.by(Self.jarrod))
            _ = try await log.appendDeleted(Self.deletion(of: first, at: 3), expectedVersion: 1, metadata: Self.by(Self.jarrod))
            _ = try await log.appendHidden(Self.hiding(second, at: 4), expectedVersion: 1, metadata: Self.by(Self.moderator))
            _ = try await log.appendPosted(third, metadata: Self.by(Self.jarrod))
            _ = try await log.appendPosted(fourth, metadata: Self.by(Self.jarrod))

            #expect(try await log.pins(PinQuery()) == [fourth, third])
            #expect(try await log.stream(third.objectId).map(\.type) == [.posted])
        }
    }

    /// An unhide puts back what was there and is not a new post, so it may leave the student past the cap;
    /// their next post takes off as many of the oldest as it takes to come back to it, oldest first.
    @Test(arguments: LocationLogKind.allCases)
    func anUnhiddenPinMayGoPastTheCapUntilTheNextPost(_ kind: LocationLogKind) async throws {
        try await Self.withLog(kind) { log in
            let (first, second, third, fourth) = (Self.pin(1, at: 1), Self.pin(2, at: 3), Self.pin(3, at: 4), Self.pin(4, at: 5))
            _ = try await log.appendPosted(first, metadata: Self.by(Self.jarrod))
            _ = try await log.appendHidden(Self.hiding(first, at: 2), expectedVersion: 1, metadata: Self.by(Self.moderator))
            _ = try await log.appendPosted(second, metadata: Self.by(Self.jarrod))
            _ = try await log.appendPosted(third, metadata: Self.by(Self.jarrod))
            _ = try await log.appendUnhidden(first, expectedVersion: 2, metadata: Self.by(Self.moderator))
            #expect(Set(try await log.pins(PinQuery())) == [first, second, third])

            let posted = try await log.appendPosted(fourth, metadata: Self.by(Self.jarrod))
            #expect(try await log.pins(PinQuery()) == [fourth, third])
            try await Self.readable(log, through: posted)
            let removals = try await log.events(after: posted, limit: 10).events.map(\.told)
            #expect(
                removals == [
                    Told(.deleted, 4, .deleted(LocationDeleted(objectId: first.objectId, uniqueKey: Self.jarrod.key, deletedAt: fourth.createdAt))),
                    Told(.deleted, 2, .deleted(LocationDeleted(objectId: second.objectId, uniqueKey: Self.jarrod.key, deletedAt: fourth.createdAt))),
                ])
        }
    }

    // MARK: Reading the pins

    @Test(arguments: LocationLogKind.allCases)
    func pinsAreFilteredByEveryKeyGivenExactly(_ kind: LocationLogKind) async throws {
        try await Self.withLog(kind) { log in
            let lagos = Self.pin(1, at: 1, mapString: "Lagos")
            let accra = Self.pin(2, at: 2, mapString: "Accra")
            let amarasLagos = Self.pin(3, by: Self.amara, at: 3, mapString: "Lagos")
            for location in [lagos, accra, amarasLagos] {
                _ = try await log.appendPosted(location, metadata: Self.by(location.uniqueKey == Self.amara.key ? Self.amara : Self.jarrod))
            }
            #expect(try await log.pins(PinQuery(filters: [.mapString: "Lagos"])) == [amarasLagos, lagos])
            #expect(try await log.pins(PinQuery(filters: [.mapString: "Lagos", .uniqueKey: Self.jarrod.key])) == [lagos])
            #expect(try await log.pins(PinQuery(filters: [.objectId: Self.id(2).rawValue])) == [accra])
            #expect(try await log.pins(PinQuery(filters: [.firstName: Self.amara.firstName])) == [amarasLagos])
            #expect(try await log.pins(PinQuery(filters: [.mapString: "lagos"])).isEmpty, "text matches in its own case")
            #expect(try await log.pins(PinQuery(filters: [.mapString: "Lagos "])).isEmpty, "and with no space to spare")
        }
    }

    /// "é" written as one character and as "e" with a combining accent read alike but are different text:
    /// PostgreSQL compares the characters as they were written.
    @Test(arguments: LocationLogKind.allCases)
    func aFilterMatchesTextAsItWasWrittenNotAsItReads(_ kind: LocationLogKind) async throws {
        try await Self.withLog(kind) { log in
            var composed = Self.pin(1, at: 1)
            composed.firstName = "Jos\u{E9}"
            var decomposed = Self.pin(2, by: Self.amara, at: 2)
            decomposed.firstName = "Jose\u{301}"
            _ = try await log.appendPosted(composed, metadata: Self.by(Self.jarrod))
            _ = try await log.appendPosted(decomposed, metadata: Self.by(Self.amara))
            // By id: Swift's own `==` takes the two spellings as equal.
            #expect(try await log.pins(PinQuery(filters: [.firstName: "Jos\u{E9}"])).map(\.objectId) == [composed.objectId])
            #expect(try await log.pins(PinQuery(filters: [.firstName: "Jose\u{301}"])).map(\.objectId) == [decomposed.objectId])
        }
    }

    /// Newest first by default; pins changed at the same moment go by objectId, descending, so that pages
    /// never repeat or skip one.
    @Test(arguments: LocationLogKind.allCases)
    func theNewestComeFirstAndTiesGoByObjectIdDescending(_ kind: LocationLogKind) async throws {
        try await Self.withLog(kind) { log in
            let together = (1...3).map { Self.pin($0, by: TestActors.student($0), at: 1) }
            let later = Self.pin(4, by: TestActors.student(4), at: 2)
            for location in [together[1], later, together[2], together[0]] {
                _ = try await log.appendPosted(location, metadata: Self.by(TestActors.student(0)))
            }
            #expect(try await log.pins(PinQuery()) == [later, together[2], together[1], together[0]])
        }
    }

    /// Ties go by objectId in the direction of the first sort key.
    @Test(arguments: LocationLogKind.allCases)
    func tiesUnderAnAscendingOrderGoByObjectIdAscending(_ kind: LocationLogKind) async throws {
        try await Self.withLog(kind) { log in
            let pins = (1...3).map { Self.pin($0, by: TestActors.student($0), at: Int64(4 - $0), mapString: "Lagos") }
            let accra = Self.pin(4, by: TestActors.student(4), at: 4, mapString: "Accra")
            for location in [pins[2], accra, pins[0], pins[1]] { _ = try await log.appendPosted(location, metadata: Self.by(Self.jarrod)) }
            #expect(try await log.pins(PinQuery(order: [.init(key: .mapString, descending: false)])) == [accra] + pins)
            #expect(try await log.pins(PinQuery(order: [.init(key: .mapString, descending: true)])) == pins.reversed() + [accra])
        }
    }

    @Test(arguments: LocationLogKind.allCases)
    func severalSortKeysApplyInTurn(_ kind: LocationLogKind) async throws {
        try await Self.withLog(kind) { log in
            let (old, new) = (Self.pin(1, at: 1), Self.pin(2, at: 3))
            let (amarasOld, amarasNew) = (Self.pin(3, by: Self.amara, at: 2), Self.pin(4, by: Self.amara, at: 4))
            for location in [old, amarasOld, new, amarasNew] {
                _ = try await log.appendPosted(location, metadata: Self.by(location.uniqueKey == Self.amara.key ? Self.amara : Self.jarrod))
            }
            // Jarrod's key (3903878747) sorts before Amara's (5550001111).
            let order = [PinQuery.Sort(key: .uniqueKey, descending: false), PinQuery.Sort(key: .updatedAt, descending: true)]
            #expect(try await log.pins(PinQuery(order: order)) == [new, old, amarasNew, amarasOld])
        }
    }

    /// Text sorts by code point, as the test cluster's C collation has it: capitals before lower case, and
    /// letters beyond ASCII after them all; a decomposed "é" ("e" and a combining accent) before the composed one.
    @Test(arguments: LocationLogKind.allCases)
    func textSortsByCodePointAsTheCCollationDoes(_ kind: LocationLogKind) async throws {
        try await Self.withLog(kind) { log in
            let sorted = ["Banana", "Jose\u{301}", "Jos\u{E9}", "Zulu", "apple", "jos", "zebra", "\u{C9}lan"]
            // Ids against that order, so that an order that took two spellings of one text as equal, and went
            // by objectId, shows; compared by id, as Swift's own `==` takes the two spellings as equal too.
            let pins = sorted.enumerated().map { Self.pin(sorted.count - $0, by: TestActors.student($0), at: Int64($0), mapString: $1) }
            for location in pins.shuffled() { _ = try await log.appendPosted(location, metadata: Self.by(Self.jarrod)) }
            let ascending = try await log.pins(PinQuery(order: [.init(key: .mapString, descending: false)]))
            #expect(ascending.map(\.objectId) == pins.map(\.objectId))
            let descending = try await log.pins(PinQuery(order: [.init(key: .mapString, descending: true)]))
            #expect(descending.map(\.objectId) == pins.reversed().map(\.objectId))
        }
    }

    /// Numbers sort by value (as text, "-10" would come before "0.5" and "10" before "2"), times by instant.
    @Test(arguments: LocationLogKind.allCases)
    func numbersSortByValueAndTimesByInstant(_ kind: LocationLogKind) async throws {
        try await Self.withLog(kind) { log in
            let latitudes: [Double] = [10, -10, 2, 0.5, -2.25]
            let pins = latitudes.enumerated().map { Self.pin($0 + 1, by: TestActors.student($0), at: Int64($0 + 1), latitude: $1) }
            for location in pins { _ = try await log.appendPosted(location, metadata: Self.by(Self.jarrod)) }
            // The first pin changed last: newest by change, oldest by creation.
            let moved = Self.moved(pins[0], to: "Abuja, Nigeria", at: 10)
            _ = try await log.appendUpdated(moved, expectedVersion: 1, metadata: Self.by(Self.jarrod))

            let byLatitude = try await log.pins(PinQuery(order: [.init(key: .latitude, descending: false)]))
            #expect(byLatitude.map(\.latitude) == [-10, -2.25, 0.5, 2, 10])
            let byCreation = try await log.pins(PinQuery(order: [.init(key: .createdAt, descending: false)]))
            #expect(byCreation.map(\.objectId) == pins.map(\.objectId))
            #expect(try await log.pins(PinQuery()).first == moved)
        }
    }

    @Test(arguments: LocationLogKind.allCases)
    func limitAndSkipPageThroughTheOrderWithoutRepeatsOrGaps(_ kind: LocationLogKind) async throws {
        try await Self.withLog(kind) { log in
            let pins = (1...5).map { Self.pin($0, by: TestActors.student($0), at: Int64($0 % 3)) }
            for location in pins { _ = try await log.appendPosted(location, metadata: Self.by(Self.jarrod)) }
            let all = try await log.pins(PinQuery())
            #expect(all.count == 5)
            var paged: [StudentLocation] = []
            for skip in stride(from: 0, to: 6, by: 2) { paged += try await log.pins(PinQuery(limit: 2, skip: skip)) }
            #expect(paged == all)
            #expect(try await log.pins(PinQuery(limit: 0)).isEmpty)
            #expect(try await log.pins(PinQuery(skip: 5)).isEmpty)
        }
    }

    // MARK: The map at a moment

    @Test(arguments: LocationLogKind.allCases)
    func theMapBeforeTheFirstEventIsEmpty(_ kind: LocationLogKind) async throws {
        try await Self.withLog(kind) { log in
            _ = try await log.appendPosted(Self.pin(1, at: 1), metadata: Self.by(Self.jarrod))
            #expect(try await Self.map(log, at: Self.time(1).advanced(by: -1)).isEmpty)
            #expect(try await Self.map(log, at: Self.time(-1000)).isEmpty)
        }
    }

    /// At an event's own moment the map shows it; between two events, what the earlier one left.
    @Test(arguments: LocationLogKind.allCases)
    func theMapAtEachEventsMomentShowsItAndBetweenThemWhatTheLastLeft(_ kind: LocationLogKind) async throws {
        try await Self.withLog(kind) { log in
            let first = Self.pin(1, at: 1)
            let other = Self.pin(2, by: Self.amara, at: 2)
            let moved = Self.moved(first, to: "Abuja, Nigeria", at: 3)
            _ = try await log.appendPosted(first, metadata: Self.by(Self.jarrod))
            _ = try await log.appendPosted(other, metadata: Self.by(Self.amara))
            _ = try await log.appendUpdated(moved, expectedVersion: 1, metadata: Self.by(Self.jarrod))

            #expect(try await Self.map(log, at: Self.time(1)) == [first])
            #expect(try await Self.map(log, at: Self.time(1).advanced(by: 500)) == [first])
            #expect(try await Self.map(log, at: Self.time(2).advanced(by: -1)) == [first])
            #expect(try await Self.map(log, at: Self.time(2)) == [other, first])
            #expect(try await Self.map(log, at: Self.time(3).advanced(by: -1)) == [other, first])
            #expect(try await Self.map(log, at: Self.time(3)) == [moved, other])
            #expect(try await Self.map(log, at: Self.time(100)) == [moved, other])
        }
    }

    @Test(arguments: LocationLogKind.allCases)
    func aDeletedPinIsOnTheMapUntilItsDeletion(_ kind: LocationLogKind) async throws {
        try await Self.withLog(kind) { log in
            let posted = Self.pin(1, at: 1)
            _ = try await log.appendPosted(posted, metadata: Self.by(Self.jarrod))
            _ = try await log.appendDeleted(Self.deletion(of: posted, at: 5), expectedVersion: 1, metadata: Self.by(Self.jarrod))
            #expect(try await Self.map(log, at: Self.time(1)) == [posted])
            #expect(try await Self.map(log, at: Self.time(5).advanced(by: -1)) == [posted])
            #expect(try await Self.map(log, at: Self.time(5)).isEmpty)
            #expect(try await Self.map(log, at: Self.time(100)).isEmpty)
        }
    }

    @Test(arguments: LocationLogKind.allCases)
    func aPinHiddenNowIsOnNoMomentsMap(_ kind: LocationLogKind) async throws {
        try await Self.withLog(kind) { log in
            let posted = Self.pin(1, at: 1)
            let other = Self.pin(2, by: Self.amara, at: 4)
            _ = try await log.appendPosted(posted, metadata: Self.by(Self.jarrod))
            _ = try await log.appendUpdated(Self.moved(posted, to: "Abuja, Nigeria", at: 2), expectedVersion: 1, metadata: Self.by(Self.jarrod))
            _ = try await log.appendHidden(Self.hiding(posted, at: 3), expectedVersion: 2, metadata: Self.by(Self.moderator))
            _ = try await log.appendPosted(other, metadata: Self.by(Self.amara))

            for seconds: Int64 in [1, 2, 3] {
                #expect(try await Self.map(log, at: Self.time(seconds)).isEmpty, "at \(seconds) s")
                #expect(try await Self.map(log, at: Self.time(seconds).advanced(by: -1)).isEmpty, "just before \(seconds) s")
            }
            #expect(try await Self.map(log, at: Self.time(4)) == [other])
            #expect(try await Self.map(log, at: Self.time(100)) == [other])
        }
    }

    /// Unhidden, the pin is back at every moment it was on the map, off it from its hide until the unhide,
    /// and back as it was hidden from the moment the log recorded the unhide.
    @Test(arguments: LocationLogKind.allCases)
    func anUnhiddenPinIsBackAtEveryMomentItWasOnTheMap(_ kind: LocationLogKind) async throws {
        try await Self.withLog(kind) { log in
            let (posted, moved) = try await Self.postMoveHideAndUnhide(on: log)
            let unhidden = try #require(try await log.stream(posted.objectId).last).moment

            #expect(try await Self.map(log, at: Self.time(1)) == [posted])
            #expect(try await Self.map(log, at: Self.time(2)) == [moved])
            #expect(try await Self.map(log, at: Self.time(3).advanced(by: -1)) == [moved])
            #expect(try await Self.map(log, at: Self.time(3)).isEmpty)
            #expect(try await Self.map(log, at: unhidden.advanced(by: -1)).isEmpty)
            #expect(try await Self.map(log, at: unhidden) == [moved])
            #expect(try await Self.map(log, at: unhidden.advanced(by: 60_000)) == [moved])
        }
    }

    @Test(arguments: LocationLogKind.allCases)
    func aPastMapIsFilteredOrderedAndPagedAsTheMapNow(_ kind: LocationLogKind) async throws {
        try await Self.withLog(kind) { log in
            let lagos = Self.pin(1, at: 1, mapString: "Lagos")
            let accra = Self.pin(2, at: 2, mapString: "Accra")
            let amaras = Self.pin(3, by: Self.amara, at: 3, mapString: "Abuja")
            for location in [lagos, accra, amaras] {
                _ = try await log.appendPosted(location, metadata: Self.by(location.uniqueKey == Self.amara.key ? Self.amara : Self.jarrod))
            }
            _ = try await log.appendUpdated(Self.moved(lagos, to: "Zaria", at: 5), expectedVersion: 1, metadata: Self.by(Self.jarrod))

            let query = PinQuery(
                filters: [.uniqueKey: Self.jarrod.key], order: [.init(key: .mapString, descending: false)], limit: 1, skip: 1, at: Self.time(4))
            #expect(try await log.pins(query) == [lagos])
        }
    }

    // MARK: Erasure

    /// Jarrod's pins (one moved, one deleted, one hidden) and Amara's; answers Jarrod's ids and Amara's pin.
    static func twoStudentsLives(_ log: any LocationLog) async throws -> (erased: [ObjectID], kept: StudentLocation) {
        let (changing, deleting, hidable) = (pin(1, at: 1), pin(2, at: 2), pin(3, at: 5))
        let amaras = pin(4, by: amara, at: 3)
        _ = try await log.appendPosted(changing, metadata: by(jarrod, key: "jarrods-first"))
        _ = try await log.appendPosted(deleting, metadata: by(jarrod))
        _ = try await log.appendPosted(amaras, metadata: by(amara, key: "amaras-first"))
        _ = try await log.appendUpdated(moved(changing, to: "Abuja, Nigeria", at: 4), expectedVersion: 1, metadata: by(jarrod))
        _ = try await log.appendDeleted(deletion(of: deleting, at: 5), expectedVersion: 1, metadata: by(jarrod))
        _ = try await log.appendPosted(hidable, metadata: by(jarrod))
        _ = try await log.appendHidden(hiding(hidable, at: 6), expectedVersion: 1, metadata: by(moderator))
        return ([changing.objectId, deleting.objectId, hidable.objectId], amaras)
    }

    @Test(arguments: LocationLogKind.allCases)
    func anErasedStudentsPinsAreGoneFromNowAndEveryMoment(_ kind: LocationLogKind) async throws {
        try await Self.withLog(kind) { log in
            let (erased, kept) = try await Self.twoStudentsLives(log)
            #expect(try await log.erase(student: Self.jarrod.key, at: Self.time(10)) == 3)

            #expect(try await log.pins(PinQuery()) == [kept])
            for objectId in erased { #expect(try await log.pin(objectId) == nil) }
            for seconds: Int64 in 0...12 {
                let expected = seconds >= 3 ? [kept] : []
                #expect(try await Self.map(log, at: Self.time(seconds)) == expected, "at \(seconds) s")
            }
            #expect(try await log.postedEvent(actorKey: Self.jarrod.key, idempotencyKey: "jarrods-first") == nil)
        }
    }

    /// Each erased stream keeps one event, in its place at the next version: a deletion with no owner, so
    /// every follower takes the pin off and a late write to it meets a version taken.
    @Test(arguments: LocationLogKind.allCases)
    func anErasedStudentsStreamsAreEachOneDeletionWithNoOwner(_ kind: LocationLogKind) async throws {
        try await Self.withLog(kind) { log in
            let (erased, _) = try await Self.twoStudentsLives(log)
            let versions = try await erased.asyncMap { try await log.stream($0).count }
            _ = try await log.erase(student: Self.jarrod.key, at: Self.time(10))

            for (objectId, version) in zip(erased, versions) {
                let removal = LocationDeleted(objectId: objectId, uniqueKey: "", deletedAt: Self.time(10))
                #expect(try await log.stream(objectId).map(\.told) == [Told(.deleted, version + 1, .deleted(removal))])
            }
            let last = try await erased.asyncMap { try #require(try await log.stream($0).last?.position) }.max()!
            try await Self.readable(log, through: last)
            let followed = try await log.events(after: .start, limit: 100).events
            #expect(!followed.contains { $0.change.location?.uniqueKey == Self.jarrod.key }, "followers read nothing of theirs")
            #expect(followed.filter { erased.contains($0.change.objectId) }.map(\.type) == [.deleted, .deleted, .deleted])
        }
    }

    @Test(arguments: LocationLogKind.allCases)
    func anErasureLeavesEveryOtherStudentsStreamAsItWas(_ kind: LocationLogKind) async throws {
        try await Self.withLog(kind) { log in
            let (_, kept) = try await Self.twoStudentsLives(log)
            let before = try await log.stream(kept.objectId)
            _ = try await log.erase(student: Self.jarrod.key, at: Self.time(10))

            #expect(try await log.stream(kept.objectId) == before)
            #expect(try await log.pin(kept.objectId) == ReadModel.Pin(location: kept, version: 1))
            #expect(try await log.postedEvent(actorKey: Self.amara.key, idempotencyKey: "amaras-first")?.location == kept)
        }
    }

    @Test(arguments: LocationLogKind.allCases)
    func aSecondErasureFindsNothing(_ kind: LocationLogKind) async throws {
        try await Self.withLog(kind) { log in
            let (erased, _) = try await Self.twoStudentsLives(log)
            _ = try await log.erase(student: Self.jarrod.key, at: Self.time(10))
            let streams = try await erased.asyncMap { try await log.stream($0) }

            #expect(try await log.erase(student: Self.jarrod.key, at: Self.time(11)) == 0)
            #expect(try await erased.asyncMap { try await log.stream($0) } == streams)
            #expect(try await log.erase(student: "never-posted", at: Self.time(12)) == 0)
        }
    }

    // MARK: Streams and followers

    @Test(arguments: LocationLogKind.allCases)
    func aStreamIsItsPinsEventsOldestFirstAndNoneForAnUnknownPin(_ kind: LocationLogKind) async throws {
        try await Self.withLog(kind) { log in
            let posted = Self.pin(1, at: 1)
            let moved = Self.moved(posted, to: "Abuja, Nigeria", at: 3)
            _ = try await log.appendPosted(posted, metadata: Self.by(Self.jarrod))
            _ = try await log.appendPosted(Self.pin(2, by: Self.amara, at: 2), metadata: Self.by(Self.amara))
            _ = try await log.appendUpdated(moved, expectedVersion: 1, metadata: Self.by(Self.jarrod))
            _ = try await log.appendDeleted(Self.deletion(of: moved, at: 4), expectedVersion: 2, metadata: Self.by(Self.jarrod))

            #expect(
                try await log.stream(posted.objectId).map(\.told) == [
                    Told(.posted, 1, .upserted(posted)), Told(.updated, 2, .upserted(moved)),
                    Told(.deleted, 3, .deleted(Self.deletion(of: moved, at: 4))),
                ])
            #expect(try await log.stream(Self.id(99)).isEmpty)
        }
    }

    @Test(arguments: LocationLogKind.allCases)
    func followersReadEveryEventInCommitOrder(_ kind: LocationLogKind) async throws {
        try await Self.withLog(kind) { log in
            let (first, second) = (Self.pin(1, at: 1), Self.pin(2, by: Self.amara, at: 2))
            let moved = Self.moved(first, to: "Abuja, Nigeria", at: 3)
            let deletion = Self.deletion(of: second, at: 4)
            let positions = [
                try await log.appendPosted(first, metadata: Self.by(Self.jarrod)),
                try await log.appendPosted(second, metadata: Self.by(Self.amara)),
                try await log.appendUpdated(moved, expectedVersion: 1, metadata: Self.by(Self.jarrod)),
                try await log.appendDeleted(deletion, expectedVersion: 1, metadata: Self.by(Self.amara)),
            ]
            try await Self.readable(log, through: positions.last!)

            let page = try await log.events(after: .start, limit: 100)
            #expect(page.events.map(\.position) == positions)
            #expect(
                page.events.map(\.told) == [
                    Told(.posted, 1, .upserted(first)), Told(.posted, 1, .upserted(second)), Told(.updated, 2, .upserted(moved)),
                    Told(.deleted, 2, .deleted(deletion)),
                ])
            #expect(page.readThrough == positions.last)
        }
    }

    /// Each page starts after the last event the one before read; past the head there is nothing to read and
    /// the cursor stays.
    @Test(arguments: LocationLogKind.allCases)
    func followersPageThroughTheLogFromWhereTheyReadThrough(_ kind: LocationLogKind) async throws {
        try await Self.withLog(kind) { log in
            var positions: [LogPosition] = []
            for number in 1...5 {
                positions.append(
                    try await log.appendPosted(Self.pin(number, by: TestActors.student(number), at: Int64(number)), metadata: Self.by(Self.jarrod)))
            }
            try await Self.readable(log, through: positions.last!)

            var (cursor, pages): (LogPosition, [[LogPosition]]) = (.start, [])
            while true {
                let page = try await log.events(after: cursor, limit: 2)
                guard let readThrough = page.readThrough else {
                    #expect(page.events.isEmpty)
                    break
                }
                pages.append(page.events.map(\.position))
                cursor = readThrough
            }
            #expect(pages == [Array(positions[0..<2]), Array(positions[2..<4]), [positions[4]]])
            #expect(try await log.events(after: positions[2], limit: 100).events.map(\.position) == Array(positions[3...]))
        }
    }

    /// A follower sees a hidden pin leave, never what it said: not its posts, updates or an earlier unhide.
    /// A page of only withheld events still moves the follower on.
    @Test(arguments: LocationLogKind.allCases)
    func aHiddenPinsPostsUpdatesAndUnhidesAreWithheldFromFollowersButItsRemovalsAreKept(_ kind: LocationLogKind) async throws {
        try await Self.withLog(kind) { log in
            let (posted, other) = (Self.pin(1, at: 1), Self.pin(2, by: Self.amara, at: 6))
            let moved = Self.moved(posted, to: "Abuja, Nigeria", at: 2)
            let (hiding, hidingAgain) = (Self.hiding(moved, at: 3), Self.hiding(moved, at: 5))
            _ = try await log.appendPosted(posted, metadata: Self.by(Self.jarrod))
            let updated = try await log.appendUpdated(moved, expectedVersion: 1, metadata: Self.by(Self.jarrod))
            _ = try await log.appendHidden(hiding, expectedVersion: 2, metadata: Self.by(Self.moderator))
            _ = try await log.appendUnhidden(moved, expectedVersion: 3, metadata: Self.by(Self.moderator))
            _ = try await log.appendHidden(hidingAgain, expectedVersion: 4, metadata: Self.by(Self.moderator))
            let last = try await log.appendPosted(other, metadata: Self.by(Self.amara))
            try await Self.readable(log, through: last)

            let page = try await log.events(after: .start, limit: 100)
            #expect(
                page.events.map(\.told) == [
                    Told(.hidden, 3, .deleted(hiding.removal)), Told(.hidden, 5, .deleted(hidingAgain.removal)), Told(.posted, 1, .upserted(other)),
                ])
            #expect(page.readThrough == last)
            let withheld = try await log.events(after: .start, limit: 2)
            #expect(withheld.events.isEmpty)
            #expect(withheld.readThrough == updated)
        }
    }

    @Test(arguments: LocationLogKind.allCases)
    func anUnhideShowsFollowersEverythingTheHiddenPinSaidAgain(_ kind: LocationLogKind) async throws {
        try await Self.withLog(kind) { log in
            let posted = Self.pin(1, at: 1)
            let moved = Self.moved(posted, to: "Abuja, Nigeria", at: 2)
            let hiding = Self.hiding(moved, at: 3)
            _ = try await log.appendPosted(posted, metadata: Self.by(Self.jarrod))
            _ = try await log.appendUpdated(moved, expectedVersion: 1, metadata: Self.by(Self.jarrod))
            _ = try await log.appendHidden(hiding, expectedVersion: 2, metadata: Self.by(Self.moderator))
            let last = try await log.appendUnhidden(moved, expectedVersion: 3, metadata: Self.by(Self.moderator))
            try await Self.readable(log, through: last)

            #expect(
                try await log.events(after: .start, limit: 100).events.map(\.told) == [
                    Told(.posted, 1, .upserted(posted)), Told(.updated, 2, .upserted(moved)), Told(.hidden, 3, .deleted(hiding.removal)),
                    Told(.unhidden, 4, .upserted(moved)),
                ])
        }
    }

    @Test(arguments: LocationLogKind.allCases)
    func theHeadIsTheLastEventAndTheStartOfAnEmptyLog(_ kind: LocationLogKind) async throws {
        try await Self.withLog(kind) { log in
            #expect(try await log.head() == .start)
            _ = try await log.appendPosted(Self.pin(1, at: 1), metadata: Self.by(Self.jarrod))
            let last = try await log.appendPosted(Self.pin(2, by: Self.amara, at: 2), metadata: Self.by(Self.amara))
            try await Self.readable(log, through: last)
            #expect(try await log.head() == last)
        }
    }

    @Test(arguments: LocationLogKind.allCases)
    func thePositionBeforeTheLatestCountIsThatManyEventsBeforeTheHead(_ kind: LocationLogKind) async throws {
        try await Self.withLog(kind) { log in
            #expect(try await log.positionBefore(latest: 0) == nil)
            var positions: [LogPosition] = []
            for number in 1...4 {
                positions.append(
                    try await log.appendPosted(Self.pin(number, by: TestActors.student(number), at: Int64(number)), metadata: Self.by(Self.jarrod)))
            }
            try await Self.readable(log, through: positions.last!)

            #expect(try await log.positionBefore(latest: 0) == positions[3])
            #expect(try await log.positionBefore(latest: 1) == positions[2])
            #expect(try await log.positionBefore(latest: 3) == positions[0])
            #expect(try await log.positionBefore(latest: 4) == nil, "the log holds no more than 4")
        }
    }
}

/// An event as both logs tell it: its type, its stream's version and the change. Positions and recording
/// times are each log's own.
struct Told: Hashable, CustomStringConvertible {
    var type: LocationEventType
    var version: Int
    var change: LocationChange

    init(_ type: LocationEventType, _ version: Int, _ change: LocationChange) {
        (self.type, self.version, self.change) = (type, version, change)
    }

    var description: String { "\(type.rawValue) v\(version) \(change)" }
}

extension RecordedEvent {
    var told: Told { Told(type, streamVersion, change) }
}

extension Array where Element: Sendable {
    fileprivate func asyncMap<T>(_ transform: (Element) async throws -> T) async throws -> [T] {
        var mapped: [T] = []
        for element in self { mapped.append(try await transform(element)) }
        return mapped
    }
}
