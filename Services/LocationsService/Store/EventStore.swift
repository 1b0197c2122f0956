import Foundation
import Logging
import OnTheMapShared
import PostgresNIO
import ServiceKit

/// The append-only event log of `locations.events`, with the read model written in the same statement.
///
/// Each append is one SQL statement (data-modifying CTEs): the event insert and the read-model change
/// commit together or not at all, in one round trip. Timestamps travel as ISO-8601 text so the stored
/// value is exactly the millisecond the event carries (a `Date` would pass through floating point). Unique constraints, not `ON CONFLICT DO NOTHING`,
/// decide races: a lost append is an error the caller sees.
///
/// The projection rule here is one of three; `PinFold` says why, and which tests hold them together.
struct EventStore: Sendable {
    let database: Database

    enum AppendError: Error, Equatable {
        /// Another append took this stream version first (optimistic concurrency).
        case versionConflict
        /// This actor already used this idempotency key.
        case duplicateIdempotencyKey
    }

    /// New pins: for each a `LocationPosted` event and its row in the read model, all in one statement, so
    /// in one transaction and one commit (the group commit of `PostAppender`). Either all are appended or
    /// none: a clash of any one fails the statement. Answers each pin's position, in the order given.
    func appendPosted(_ batch: [(location: StudentLocation, metadata: EventMetadata)]) async throws -> [LogPosition] {
        let streams = batch.map { StreamName($0.location.objectId).rawValue }
        let rows = try await appendRows(
            PostgresQuery(
                """
                WITH input AS (
                    SELECT * FROM unnest(\(streams)::text[], \(batch.map { $0.location.objectId.rawValue })::text[], \(batch.map { String(buffer: $0.location.json) })::text[],
                                         \(batch.map { $0.metadata.json })::text[], \(batch.map { $0.metadata.actor.key })::text[], \(batch.map { $0.metadata.idempotencyKey ?? "" })::text[],
                                         \(batch.map { $0.location.uniqueKey })::text[], \(batch.map { $0.location.firstName })::text[],
                                         \(batch.map { $0.location.lastName })::text[], \(batch.map { $0.location.mapString })::text[],
                                         \(batch.map { $0.location.mediaURL })::text[], \(batch.map { $0.location.latitude })::float8[],
                                         \(batch.map { $0.location.longitude })::float8[], \(batch.map { $0.location.createdAt.iso8601 })::text[],
                                         \(batch.map { $0.metadata.map })::text[])
                        WITH ORDINALITY AS t(stream_name, object_id, data, metadata, actor_key, idempotency_key, unique_key, first_name, last_name,
                                             map_string, media_url, latitude, longitude, created_at, map, n)
                ), appended AS (
                    INSERT INTO locations.events
                        (stream_name, stream_version, event_type, schema_version, data, metadata, actor_key, idempotency_key, map)
                    SELECT stream_name, 1, \(LocationEventType.posted.rawValue), \(LocationEventType.schemaVersion),
                           data::jsonb, metadata::jsonb, actor_key, NULLIF(idempotency_key, ''), map
                    FROM input ORDER BY n
                    RETURNING transaction_id, position, stream_name
                ), projected AS (
                    INSERT INTO locations.pins (object_id, unique_key, first_name, last_name, map_string, media_url,
                                                latitude, longitude, created_at, updated_at, version, map)
                    SELECT object_id, unique_key, first_name, last_name, map_string, media_url,
                           latitude, longitude, created_at::timestamptz, created_at::timestamptz, 1, map
                    FROM input ORDER BY map, unique_key
                )
                SELECT transaction_id::text::bigint, position, stream_name FROM appended
                """))
        var positions: [String: LogPosition] = [:]
        for row in rows {
            let (transaction, position, stream) = try row.decode((Int64, Int64, String).self)
            positions[stream] = LogPosition(transactionId: transaction, position: position)
        }
        // RETURNING promises no order, so each pin finds its own by stream.
        return try streams.map { stream in
            guard let position = positions[stream] else { throw PostgresAppendMissing() }
            return position
        }
    }

    /// `LocationUpdated` at `expectedVersion + 1`; fails with `.versionConflict` unless the stream is at `expectedVersion`
    /// (someone else got there first, or it never got there).
    @discardableResult
    func appendUpdated(_ location: StudentLocation, expectedVersion: Int, metadata: EventMetadata) async throws -> LogPosition {
        try await appendPin(location, as: .updated, expectedVersion: expectedVersion, metadata: metadata)
    }

    /// `LocationDeleted` at `expectedVersion + 1`; the pin leaves the read model, its history stays.
    @discardableResult
    func appendDeleted(_ deletion: LocationDeleted, expectedVersion: Int, metadata: EventMetadata) async throws -> LogPosition {
        try await appendRemoval(deletion.objectId, as: .deleted, data: deletion.json, expectedVersion: expectedVersion, metadata: metadata)
    }

    /// `LocationHidden` at `expectedVersion + 1`: an operator takes the pin off the map as a deletion does.
    @discardableResult
    func appendHidden(_ hidden: LocationHidden, expectedVersion: Int, metadata: EventMetadata) async throws -> LogPosition {
        try await appendRemoval(hidden.objectId, as: .hidden, data: hidden.json, expectedVersion: expectedVersion, metadata: metadata)
    }

    /// `LocationUnhidden` at `expectedVersion + 1`: the hidden pin comes back to the read model as it was hidden.
    @discardableResult
    func appendUnhidden(_ location: StudentLocation, expectedVersion: Int, metadata: EventMetadata) async throws -> LogPosition {
        try await appendPin(location, as: .unhidden, expectedVersion: expectedVersion, metadata: metadata)
    }

    /// Whether an event's own statement tells every replica (`ChangeNotifier`'s channel) that the log moved.
    /// Moderation is appended by an operator's command, in a process of its own with no notifier, so its
    /// statement announces itself; every other append is announced by its replica, coalesced, outside the
    /// append (a `NOTIFY` serialises committing transactions).
    private static func announces(_ type: LocationEventType) -> Bool { type == .hidden || type == .unhidden }

    /// An event that carries the pin's whole state (`LocationUpdated`, `LocationUnhidden`), at `expectedVersion
    /// + 1`, and the pin written with it: changed, or back in the read model after a hide.
    private func appendPin(
        _ location: StudentLocation, as type: LocationEventType, expectedVersion: Int, metadata: EventMetadata
    ) async throws -> LogPosition {
        let stream = StreamName(location.objectId).rawValue
        let data = String(buffer: location.json)
        let version = expectedVersion + 1
        return try await append(
            PostgresQuery(
                """
                WITH appended AS (
                    INSERT INTO locations.events
                        (stream_name, stream_version, event_type, schema_version, data, metadata, actor_key, idempotency_key, map)
                    SELECT \(stream), \(version), \(type.rawValue), \(LocationEventType.schemaVersion),
                           \(data)::jsonb, \(metadata.json)::jsonb, \(metadata.actor.key), NULL, \(metadata.map)
                    WHERE EXISTS (SELECT FROM locations.events WHERE stream_name = \(stream) AND stream_version = \(expectedVersion))
                    RETURNING transaction_id, position
                ), projected AS (
                    INSERT INTO locations.pins (object_id, unique_key, first_name, last_name, map_string, media_url,
                                                latitude, longitude, created_at, updated_at, version, map)
                    SELECT \(location.objectId.rawValue), \(location.uniqueKey), \(location.firstName), \(location.lastName),
                           \(location.mapString), \(location.mediaURL), \(location.latitude), \(location.longitude),
                           \(location.createdAt.iso8601)::timestamptz, \(location.updatedAt.iso8601)::timestamptz, \(version), \(metadata.map)
                    FROM appended
                    ON CONFLICT (object_id) DO UPDATE
                    SET unique_key = EXCLUDED.unique_key, first_name = EXCLUDED.first_name, last_name = EXCLUDED.last_name,
                        map_string = EXCLUDED.map_string, media_url = EXCLUDED.media_url,
                        latitude = EXCLUDED.latitude, longitude = EXCLUDED.longitude,
                        updated_at = EXCLUDED.updated_at, version = EXCLUDED.version
                ), announced AS (
                    SELECT pg_notify(\(ChangeNotifier.channel), '') WHERE \(Self.announces(type))
                )
                SELECT transaction_id::text::bigint, position FROM appended LEFT JOIN announced ON true
                """))
    }

    /// An event that takes the pin off the map (`LocationDeleted`, `LocationHidden`) at `expectedVersion + 1`;
    /// the pin leaves the read model, its history stays.
    private func appendRemoval(
        _ objectId: ObjectID, as type: LocationEventType, data: ByteBuffer, expectedVersion: Int, metadata: EventMetadata
    ) async throws -> LogPosition {
        let stream = StreamName(objectId).rawValue
        let data = String(buffer: data)
        let version = expectedVersion + 1
        return try await append(
            PostgresQuery(
                """
                WITH appended AS (
                    INSERT INTO locations.events
                        (stream_name, stream_version, event_type, schema_version, data, metadata, actor_key, idempotency_key, map)
                    SELECT \(stream), \(version), \(type.rawValue), \(LocationEventType.schemaVersion),
                           \(data)::jsonb, \(metadata.json)::jsonb, \(metadata.actor.key), NULL, \(metadata.map)
                    WHERE EXISTS (SELECT FROM locations.events WHERE stream_name = \(stream) AND stream_version = \(expectedVersion))
                    RETURNING transaction_id, position
                ), projected AS (
                    DELETE FROM locations.pins WHERE object_id = \(objectId.rawValue) AND EXISTS (SELECT FROM appended)
                ), announced AS (
                    SELECT pg_notify(\(ChangeNotifier.channel), '') WHERE \(Self.announces(type))
                )
                SELECT transaction_id::text::bigint, position FROM appended LEFT JOIN announced ON true
                """))
    }

    /// An append at `expectedVersion + 1` that inserts only when the stream holds `expectedVersion`: the unique
    /// (stream, version) refuses a stale version, this an unreached one, which would leave a gap.
    private func append(_ query: PostgresQuery) async throws -> LogPosition {
        guard let row = try await appendRows(query).first else { throw AppendError.versionConflict }
        let (transaction, position) = try row.decode((Int64, Int64).self)
        return LogPosition(transactionId: transaction, position: position)
    }

    /// Runs an append statement, turning a unique-constraint clash into its meaning.
    private func appendRows(_ query: PostgresQuery) async throws -> [PostgresRow] {
        do {
            return try await database.write(query)
        } catch let error as PSQLError where error.serverInfo?[.sqlState] == "23505" {
            switch error.serverInfo?[.constraintName] {
            case "events_idempotency_unique": throw AppendError.duplicateIdempotencyKey
            default: throw AppendError.versionConflict
            }
        }
    }

    /// `locations.erase_student`: the one change the log allows to its past, in one statement.
    func erase(student: String, at moment: Timestamp) async throws -> Int {
        let rows = try await database.write("SELECT locations.erase_student(\(student), \(moment.iso8601)::timestamptz)")
        return try rows.first?.decode(Int.self) ?? 0
    }

    /// The pin a `LocationPosted` with this actor's idempotency key created, and the hash of its request.
    func postedEvent(actorKey: String, idempotencyKey: String) async throws -> (location: StudentLocation, requestHash: String?)? {
        let rows = try await database.query(
            """
            SELECT data::text, metadata->>'requestHash' FROM locations.events
            WHERE actor_key = \(actorKey) AND idempotency_key = \(idempotencyKey)
            """)
        guard let row = rows.first else { return nil }
        let (data, hash) = try row.decode((String, String?).self)
        return (try JSONDecoder().decode(StudentLocation.self, from: Data(data.utf8)), hash)
    }

    // The select list renames `transaction_id::text::bigint` to `transaction_id`, so every ORDER BY
    // names the table's column (`events.transaction_id`) to sort by the index, not by the cast.

    /// Events after `position` in commit order, never past the oldest transaction still running: an event
    /// below that horizon can no longer be joined by an earlier one that commits late.
    /// What a pin hidden now showed is withheld (`locations.hidden_pins`).
    /// Only `map`'s pins' events (`''`: the default map's).
    func events(after position: LogPosition, limit: Int, map: String = "") async throws -> LogPage {
        let rows = try await database.query(
            """
            SELECT \(unescaped: RecordedEvent.columns),
                   event_type IN ('LocationPosted', 'LocationUpdated', 'LocationUnhidden')
                   AND EXISTS (SELECT FROM locations.hidden_pins AS hidden WHERE hidden.object_id = substr(stream_name, 10)) AS withheld
            FROM locations.events
            WHERE (transaction_id, position) > (\(String(position.transactionId))::xid8, \(position.position))
              AND transaction_id < pg_snapshot_xmin(pg_current_snapshot())
              AND map = \(map) AND stream_name LIKE 'location-%'
            ORDER BY \(unescaped: map.isEmpty ? "" : "events.map, ")events.transaction_id, events.position
            LIMIT \(limit)
            """)
        var page = LogPage()
        for row in rows {
            let event = try RecordedEvent(row)
            page.readThrough = event.position
            if try !row.makeRandomAccess()["withheld"].decode(Bool.self) { page.events.append(event) }
        }
        return page
    }

    /// The class maps' events after `position`, as `events(after:limit:map:)` reads one map's: every class
    /// map's pins' events in commit order (each with its map), and which maps moved, their own lives'
    /// events (settings, members, invites) included. For the gateway, which keeps each map's list and
    /// streams from one follower of them all.
    func classMapEvents(after position: LogPosition, limit: Int) async throws -> LogPage {
        let rows = try await database.query(
            """
            SELECT \(unescaped: RecordedEvent.columns), stream_name LIKE 'location-%' AS pin,
                   event_type IN ('LocationPosted', 'LocationUpdated', 'LocationUnhidden')
                   AND EXISTS (SELECT FROM locations.hidden_pins AS hidden WHERE hidden.object_id = substr(stream_name, 10)) AS withheld
            FROM locations.events
            WHERE (transaction_id, position) > (\(String(position.transactionId))::xid8, \(position.position))
              AND transaction_id < pg_snapshot_xmin(pg_current_snapshot())
              AND map <> ''
            ORDER BY events.transaction_id, events.position
            LIMIT \(limit)
            """)
        var page = LogPage()
        var moved: Set<String> = []
        for row in rows {
            let columns = row.makeRandomAccess()
            let map = try columns["map"].decode(String.self)
            if moved.insert(map).inserted { page.moved.append(map) }
            guard try columns["pin"].decode(Bool.self) else {
                page.readThrough = LogPosition(transactionId: try columns[0].decode(Int64.self), position: try columns[1].decode(Int64.self))
                continue
            }
            let event = try RecordedEvent(row)
            page.readThrough = event.position
            if try !columns["withheld"].decode(Bool.self) { page.events.append(event) }
        }
        return page
    }

    /// Every event of one pin's stream, oldest first (committed ones, whatever the horizon).
    func stream(_ objectId: ObjectID) async throws -> [RecordedEvent] {
        let rows = try await database.query(
            """
            SELECT \(unescaped: RecordedEvent.columns)
            FROM locations.events
            WHERE stream_name = \(StreamName(objectId).rawValue)
            ORDER BY stream_version
            """)
        return try rows.map(RecordedEvent.init)
    }

    /// The newest position a follower may read up to right now.
    func head() async throws -> LogPosition {
        try await positionBefore(latest: 0) ?? .start
    }

    /// The event `count` places before the head in commit order (the head itself for 0): one walk down the
    /// commit-order index, `count + 1` entries long.
    func positionBefore(latest count: Int) async throws -> LogPosition? {
        let rows = try await database.query(
            """
            SELECT transaction_id::text::bigint, position
            FROM locations.events
            WHERE transaction_id < pg_snapshot_xmin(pg_current_snapshot())
            ORDER BY events.transaction_id DESC, events.position DESC
            OFFSET \(count) LIMIT 1
            """)
        guard let row = rows.first else { return nil }
        let (transaction, position) = try row.decode((Int64, Int64).self)
        return LogPosition(transactionId: transaction, position: position)
    }
}

struct PostgresAppendMissing: Error {}

/// One event as a follower of the log reads it, its payload already unpacked by SQL. A hide reads as the
/// pin's removal, without its reason; an unhide as the pin.
extension RecordedEvent {
    /// When the change took effect, as `locations.event_moment` reads it: the time the pin itself carries
    /// (`updatedAt`, or `deletedAt` and `hiddenAt` for a removal), or for an unhide, whose pin keeps the times
    /// it had, when the log recorded it.
    var moment: Timestamp {
        switch change {
        case .upserted(let location): type == .unhidden ? max(location.updatedAt, recordedAt) : location.updatedAt
        case .deleted(let removal): removal.deletedAt
        }
    }
}

struct RecordedEvent: Sendable, Hashable {
    var position: LogPosition
    var type: LocationEventType
    var streamVersion: Int
    var change: LocationChange
    var recordedAt: Timestamp
    /// The pin's map (`''`: the default map).
    var map: String = ""

    static let columns = """
        transaction_id::text::bigint, position, stream_version, event_type,
        (extract(epoch FROM date_trunc('milliseconds', recorded_at)) * 1000)::bigint,
        data->>'objectId', data->>'uniqueKey', data->>'firstName', data->>'lastName', data->>'mapString',
        data->>'mediaURL', (data->>'latitude')::float8, (data->>'longitude')::float8,
        data->>'createdAt', coalesce(data->>'updatedAt', data->>'deletedAt', data->>'hiddenAt'), map
        """

    init(_ row: PostgresRow) throws {
        let (
            transaction, position, version, type, recordedAt, objectId, uniqueKey, firstName, lastName, mapString,
            mediaURL, latitude, longitude, createdAt, changedAt, map
        ) = try row.decode(
            (
                Int64, Int64, Int, String, Int64, String, String, String?, String?, String?,
                String?, Double?, Double?, String?, String?, String
            ).self)
        self.map = map
        self.position = LogPosition(transactionId: transaction, position: position)
        self.streamVersion = version
        // In whole milliseconds, cut as `locations.event_moment` cuts them (not rounded, as a `Date` would be).
        self.recordedAt = Timestamp(millisecondsSince1970: recordedAt)
        let changed = changedAt.flatMap(Timestamp.init(iso8601:)) ?? self.recordedAt
        guard let eventType = LocationEventType(rawValue: type) else { throw UnknownEventType(type: type) }
        self.type = eventType
        switch eventType {
        case .deleted, .hidden:
            change = .deleted(LocationDeleted(objectId: ObjectID(objectId), uniqueKey: uniqueKey, deletedAt: changed))
        case .posted, .updated, .unhidden:
            change = .upserted(
                StudentLocation(
                    objectId: ObjectID(objectId), uniqueKey: uniqueKey, firstName: firstName ?? "", lastName: lastName ?? "",
                    mapString: mapString ?? "", mediaURL: mediaURL ?? "", latitude: latitude ?? 0, longitude: longitude ?? 0,
                    createdAt: createdAt.flatMap(Timestamp.init(iso8601:)) ?? changed, updatedAt: changed))
        }
    }
}

struct UnknownEventType: Error, CustomStringConvertible {
    let type: String
    var description: String { "the event log holds an event of unknown type \(type)" }
}

extension RecordedEvent {
    init(position: LogPosition, type: LocationEventType, streamVersion: Int, change: LocationChange, recordedAt: Timestamp, map: String = "") {
        self.map = map
        self.position = position
        self.type = type
        self.streamVersion = streamVersion
        self.change = change
        self.recordedAt = recordedAt
    }
}
