import OnTheMapShared

/// What the routes and commands need of the event log and its read model: appends that check the
/// stream's version, the pins as they are now, and the log in commit order for followers.
/// `PostgresLocationLog` is the service's; the tests' `MemoryLocationLog` (module `ServiceTwins`) holds the
/// same in memory, for router-level tests of what is decided above the store (the contract's shapes,
/// validation, ownership, versions).
protocol LocationLog: Sendable {
    /// A new pin's `LocationPosted` event; `EventStore.AppendError.duplicateIdempotencyKey` when the
    /// actor already used the metadata's idempotency key.
    func appendPosted(_ location: StudentLocation, metadata: EventMetadata) async throws -> LogPosition
    /// `EventStore.AppendError.versionConflict` unless the pin is at `expectedVersion`.
    func appendUpdated(_ location: StudentLocation, expectedVersion: Int, metadata: EventMetadata) async throws -> LogPosition
    func appendDeleted(_ deletion: LocationDeleted, expectedVersion: Int, metadata: EventMetadata) async throws -> LogPosition
    /// An operator's hide: the pin leaves the read model as with a deletion, at `expectedVersion + 1`.
    func appendHidden(_ hidden: LocationHidden, expectedVersion: Int, metadata: EventMetadata) async throws -> LogPosition
    /// An operator's unhide of a hidden pin (absent from the read model) whose stream is at `expectedVersion`.
    func appendUnhidden(_ location: StudentLocation, expectedVersion: Int, metadata: EventMetadata) async throws -> LogPosition
    /// Everything of the student whose account key is `student`: every event of each pin they posted, gone,
    /// and in each stream's place a `LocationDeleted` with nothing of theirs, at `moment`; their pins off the
    /// map and out of every past one. All at once or not at all; answers how many pins were erased.
    func erase(student: String, at moment: Timestamp) async throws -> Int
    /// Every event of one pin's stream, oldest first.
    func stream(_ objectId: ObjectID) async throws -> [RecordedEvent]
    /// The pin a post with this actor's idempotency key created, and the hash of that request's body.
    func postedEvent(actorKey: String, idempotencyKey: String) async throws -> (location: StudentLocation, requestHash: String?)?
    /// At most `limit` events of `map`'s pins (`''`: the default map's) after `position`, in commit order,
    /// without what a pin hidden now showed.
    func events(after position: LogPosition, limit: Int, map: String) async throws -> LogPage
    /// At most `limit` events of every class map after `position` (their pins' as `events` reads them, and
    /// each map that moved, by its pins or its own life, in `moved`).
    func classMapEvents(after position: LogPosition, limit: Int) async throws -> LogPage
    /// The newest position a follower may read up to.
    func head() async throws -> LogPosition
    /// The newest event before the latest `count` a follower may read, in commit order: a cursor older than
    /// it has more than `count` events after it. Nil when the log holds no more than `count`.
    func positionBefore(latest count: Int) async throws -> LogPosition?
    func pin(_ objectId: ObjectID) async throws -> ReadModel.Pin?
    func pins(_ query: PinQuery) async throws -> [StudentLocation]
}

extension LocationLog {
    /// The default map's events.
    func events(after position: LogPosition, limit: Int) async throws -> LogPage {
        try await events(after: position, limit: limit, map: "")
    }
}

/// A page of the log as its followers read it.
struct LogPage: Sendable, Hashable {
    /// The events read, but for what a pin hidden now showed (its posts, updates and unhides): a follower
    /// sees a hidden pin leave, never what it said. An unhide shows them again to whoever reads them next.
    var events: [RecordedEvent] = []
    /// The last event read, shown or withheld: the next page starts after it. Nil when none was read.
    var readThrough: LogPosition?
    /// The class maps the page's stretch moved, in the order first seen (`classMapEvents` alone fills it).
    var moved: [String] = []
}

/// The log in PostgreSQL: `EventStore` appends (new pins through `PostAppender`'s group commit) and
/// `ReadModel` reads.
struct PostgresLocationLog: LocationLog {
    let events: EventStore
    let posts: PostAppender
    let readModel: ReadModel

    func appendPosted(_ location: StudentLocation, metadata: EventMetadata) async throws -> LogPosition {
        try await posts.append(location, metadata: metadata)
    }

    func appendUpdated(_ location: StudentLocation, expectedVersion: Int, metadata: EventMetadata) async throws -> LogPosition {
        try await events.appendUpdated(location, expectedVersion: expectedVersion, metadata: metadata)
    }

    func appendDeleted(_ deletion: LocationDeleted, expectedVersion: Int, metadata: EventMetadata) async throws -> LogPosition {
        try await events.appendDeleted(deletion, expectedVersion: expectedVersion, metadata: metadata)
    }

    func appendHidden(_ hidden: LocationHidden, expectedVersion: Int, metadata: EventMetadata) async throws -> LogPosition {
        try await events.appendHidden(hidden, expectedVersion: expectedVersion, metadata: metadata)
    }

    func appendUnhidden(_ location: StudentLocation, expectedVersion: Int, metadata: EventMetadata) async throws -> LogPosition {
        try await events.appendUnhidden(location, expectedVersion: expectedVersion, metadata: metadata)
    }

    func erase(student: String, at moment: Timestamp) async throws -> Int { try await events.erase(student: student, at: moment) }

    func stream(_ objectId: ObjectID) async throws -> [RecordedEvent] { try await events.stream(objectId) }

    func postedEvent(actorKey: String, idempotencyKey: String) async throws -> (location: StudentLocation, requestHash: String?)? {
        try await events.postedEvent(actorKey: actorKey, idempotencyKey: idempotencyKey)
    }

    func events(after position: LogPosition, limit: Int, map: String) async throws -> LogPage {
        try await events.events(after: position, limit: limit, map: map)
    }

    func classMapEvents(after position: LogPosition, limit: Int) async throws -> LogPage {
        try await events.classMapEvents(after: position, limit: limit)
    }

    func head() async throws -> LogPosition { try await events.head() }

    func positionBefore(latest count: Int) async throws -> LogPosition? { try await events.positionBefore(latest: count) }

    func pin(_ objectId: ObjectID) async throws -> ReadModel.Pin? { try await readModel.pin(objectId) }

    func pins(_ query: PinQuery) async throws -> [StudentLocation] { try await readModel.pins(query) }
}
