import Foundation
import Logging
import OnTheMapShared
import PostgresNIO

/// Rebuilds the read model from the event log while the service keeps serving.
///
/// 1. Find each stream's last event up to the visibility horizon (every posted, updated or unhidden event
///    carries the pin's whole state, so the last one decides; a deletion or a hide removes it), and copy
///    those events' pins from the log into a shadow table, in one statement that PostgreSQL runs over the log.
/// 2. Index the shadow table.
/// 3. Catch up with events that arrived meanwhile, applying them to the shadow table.
/// 4. Briefly lock out appends, apply the last few events, and swap the shadow table in (or, when
///    verifying, compare it with the live table and throw it away).
///
/// The projection rule here is one of three; `PinFold` says why, and which tests hold them together.
struct Replayer: Sendable {
    let client: PostgresClient
    let logger: Logger

    struct Summary: Sendable {
        var events = 0
        var pins = 0
        var caughtUp = 0
        /// The maps' own events (created, settings, members, invites) folded into the maps' read models.
        var mapEvents = 0
        var differences: [String] = []
        var differenceCount = 0
        var seconds = 0.0
    }

    func run(verify: Bool, progress makeProgress: (Int) -> ProgressReporter) async throws -> Summary {
        let table = verify ? "pins_verify" : "pins_rebuild"
        let started = ContinuousClock.now
        return try await client.withConnection { connection in
            var summary = Summary()
            let total = try await count("SELECT count(*) FROM locations.events", on: connection)
            let progress = makeProgress(total)

            try await connection.query("DROP TABLE IF EXISTS locations.\(unescaped: table)", logger: logger)
            try await connection.query(
                """
                CREATE TABLE locations.\(unescaped: table) (LIKE locations.pins INCLUDING DEFAULTS)
                """, logger: logger)

            // 1. Each stream's last event below the visibility horizon is found by PostgreSQL in one pass over
            //    the log (versions of a stream commit in order, so its highest version is its last event), and
            //    its pin is copied from the log into the shadow table in the same statement. Nothing is held
            //    here per pin or per event, so the replay's memory is the same whatever the size of the log.
            //    One snapshot gives both the pins and the cursor after them.
            var cursor = LogPosition.start
            progress.advance(to: 0, force: true)
            try await connection.query("BEGIN ISOLATION LEVEL REPEATABLE READ", logger: logger)
            do {
                let newest = try await connection.query(
                    """
                    SELECT transaction_id::text::bigint, position FROM locations.events
                    WHERE transaction_id < pg_snapshot_xmin(pg_current_snapshot())
                    ORDER BY events.transaction_id DESC, events.position DESC LIMIT 1
                    """, logger: logger
                ).collect()
                if let row = newest.first {
                    let (transaction, position) = try row.decode((Int64, Int64).self)
                    cursor = LogPosition(transactionId: transaction, position: position)
                }
                let folded = try await connection.query(
                    """
                    WITH last AS (
                        SELECT (max(ARRAY[stream_version::bigint, position]))[2] AS position, count(*) AS events
                        FROM locations.events
                        WHERE transaction_id < pg_snapshot_xmin(pg_current_snapshot()) AND stream_name LIKE 'location-%'
                        GROUP BY stream_name
                    ), loaded AS (
                        INSERT INTO locations.\(unescaped: table) (\(unescaped: Self.columns.joined(separator: ", ")))
                        SELECT data->>'objectId', data->>'uniqueKey', data->>'firstName', data->>'lastName', data->>'mapString',
                               data->>'mediaURL', (data->>'latitude')::float8, (data->>'longitude')::float8,
                               (data->>'createdAt')::timestamptz, (data->>'updatedAt')::timestamptz, stream_version, map
                        FROM locations.events JOIN last USING (position)
                        WHERE event_type NOT IN (\(LocationEventType.deleted.rawValue), \(LocationEventType.hidden.rawValue))
                        RETURNING 1
                    )
                    SELECT (SELECT coalesce(sum(events), 0) FROM last)::bigint, (SELECT count(*) FROM loaded)
                    """, logger: logger
                ).collect()
                summary.events = try folded.first.map { try Int($0.decode((Int64, Int64).self).0) } ?? 0
                try await connection.query("COMMIT", logger: logger)
            } catch {
                _ = try? await connection.query("ROLLBACK", logger: logger)
                throw error
            }
            progress.finish(summary.events)

            // 2. Index the shadow table as the live one is.
            try await connection.query(
                """
                ALTER TABLE locations.\(unescaped: table) ADD CONSTRAINT \(unescaped: table)_pkey PRIMARY KEY (object_id)
                """, logger: logger)
            try await connection.query(
                """
                CREATE INDEX \(unescaped: table)_newest_first ON locations.\(unescaped: table) (map, updated_at DESC, object_id DESC)
                """, logger: logger)
            try await connection.query(
                """
                CREATE INDEX \(unescaped: table)_by_owner ON locations.\(unescaped: table) (unique_key, updated_at DESC)
                """, logger: logger)

            // 3. Catch up with what was appended while we read and loaded.
            // Each pass applies a whole batch in two statements, so it outruns the writers.
            while true {
                let events = try await eventsAfter(cursor, belowHorizon: true, on: connection)
                try await apply(events, to: table, on: connection)
                summary.caughtUp += events.count
                cursor = events.last?.position ?? cursor
                if events.count < 100 { break }
            }

            // 4. The last few, with appends held back, then swap or compare.
            try await connection.withTransaction(logger: logger) { connection in
                // SHARE mode waits for every append in flight and blocks new ones until we commit.
                try await connection.query("LOCK TABLE locations.events IN SHARE MODE", logger: logger)
                let events = try await eventsAfter(cursor, belowHorizon: false, on: connection)
                try await apply(events, to: table, on: connection)
                summary.caughtUp += events.count
                cursor = events.last?.position ?? cursor
                if verify {
                    (summary.differenceCount, summary.differences) = try await differences(on: connection)
                    let maps = try await mapDifferences(on: connection)
                    summary.mapEvents = maps.events
                    summary.differenceCount += maps.differences.count
                    summary.differences += maps.differences.prefix(50)
                } else {
                    summary.mapEvents = try await count("SELECT locations.rebuild_maps()", on: connection)
                    try await swap(on: connection, checkpoint: cursor)
                }
            }
            if verify {
                try await connection.query("DROP TABLE IF EXISTS locations.\(unescaped: table)", logger: logger)
            }
            summary.pins = try await count("SELECT count(*) FROM locations.pins", on: connection)
            let elapsed = ContinuousClock.now - started
            summary.seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            return summary
        }
    }

    private func count(_ query: PostgresQuery, on connection: PostgresConnection) async throws -> Int {
        let rows = try await connection.query(query, logger: logger)
        return try await rows.collect().first?.decode(Int.self) ?? 0
    }

    private func eventsAfter(_ cursor: LogPosition, belowHorizon: Bool, on connection: PostgresConnection) async throws -> [RecordedEvent] {
        let horizon = belowHorizon ? "AND transaction_id < pg_snapshot_xmin(pg_current_snapshot())" : ""
        let rows = try await connection.query(
            """
            SELECT \(unescaped: RecordedEvent.columns)
            FROM locations.events
            WHERE (transaction_id, position) > (\(String(cursor.transactionId))::xid8, \(cursor.position))
              AND stream_name LIKE 'location-%'
              \(unescaped: horizon)
            ORDER BY events.transaction_id, events.position
            LIMIT 10000
            """, logger: logger)
        var events: [RecordedEvent] = []
        for try await row in rows { events.append(try RecordedEvent(row)) }
        if events.count == 10000 {
            return events + (try await eventsAfter(events.last!.position, belowHorizon: belowHorizon, on: connection))
        }
        return events
    }

    /// Applies events to a table that already holds the state before them.
    private func apply(_ events: [RecordedEvent], to table: String, on connection: PostgresConnection) async throws {
        var fold = PinFold()
        for event in events { fold.apply(event) }
        guard !fold.isEmpty else { return }
        if !fold.deletions.isEmpty {
            try await connection.query(
                """
                DELETE FROM locations.\(unescaped: table) WHERE object_id = ANY(\(Array(fold.deletions)))
                """, logger: logger)
        }
        guard !fold.rows.isEmpty else { return }
        let rows = Array(fold.rows.values)
        let pins = rows.map(\.location)
        try await connection.query(
            """
            INSERT INTO locations.\(unescaped: table) (\(unescaped: Self.columns.joined(separator: ", ")))
            SELECT object_id, unique_key, first_name, last_name, map_string, media_url, latitude, longitude,
                   created_at::timestamptz, updated_at::timestamptz, version, map
            FROM unnest(\(pins.map(\.objectId.rawValue))::text[], \(pins.map(\.uniqueKey))::text[],
                        \(pins.map(\.firstName))::text[], \(pins.map(\.lastName))::text[], \(pins.map(\.mapString))::text[],
                        \(pins.map(\.mediaURL))::text[], \(pins.map(\.latitude))::float8[], \(pins.map(\.longitude))::float8[],
                        \(pins.map(\.createdAt.iso8601))::text[], \(pins.map(\.updatedAt.iso8601))::text[], \(rows.map(\.version))::int[],
                        \(rows.map(\.map))::text[])
                 AS batch(object_id, unique_key, first_name, last_name, map_string, media_url, latitude, longitude,
                          created_at, updated_at, version, map)
            ON CONFLICT (object_id) DO UPDATE SET
                unique_key = EXCLUDED.unique_key, first_name = EXCLUDED.first_name, last_name = EXCLUDED.last_name,
                map_string = EXCLUDED.map_string, media_url = EXCLUDED.media_url, latitude = EXCLUDED.latitude,
                longitude = EXCLUDED.longitude, created_at = EXCLUDED.created_at, updated_at = EXCLUDED.updated_at,
                version = EXCLUDED.version, map = EXCLUDED.map
            """, logger: logger)
    }

    private func swap(on connection: PostgresConnection, checkpoint: LogPosition) async throws {
        for statement in [
            "ALTER TABLE locations.pins RENAME TO pins_retired",
            "ALTER TABLE locations.pins_rebuild RENAME TO pins",
            "DROP TABLE locations.pins_retired",
            "ALTER TABLE locations.pins RENAME CONSTRAINT pins_rebuild_pkey TO pins_pkey",
            "ALTER INDEX locations.pins_rebuild_newest_first RENAME TO pins_newest_first",
            "ALTER INDEX locations.pins_rebuild_by_owner RENAME TO pins_by_owner",
        ] + PinCap.triggers + PinCap.recount {
            try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
        }
        try await connection.query(
            """
            INSERT INTO locations.projection_checkpoints (projection, transaction_id, position)
            VALUES ('pins', \(String(checkpoint.transactionId))::xid8, \(checkpoint.position))
            ON CONFLICT (projection) DO UPDATE
            SET transaction_id = EXCLUDED.transaction_id, position = EXCLUDED.position, recorded_at = now()
            """, logger: logger)
        // Every replica's cached list may predate the swap.
        try await connection.query("SELECT pg_notify(\(ChangeNotifier.channel), '')", logger: logger)
    }

    /// The maps' read models rebuilt from the log (`locations.rebuild_maps`) and compared with the live ones,
    /// row by row; the rebuild is then undone. Runs inside the transaction that holds appends back.
    private func mapDifferences(on connection: PostgresConnection) async throws -> (events: Int, differences: [String]) {
        try await connection.query("SAVEPOINT maps_verify", logger: logger)
        for table in Self.mapTables {
            try await connection.query(
                PostgresQuery(unsafeSQL: "CREATE TEMPORARY TABLE \(table)_live ON COMMIT DROP AS SELECT * FROM locations.\(table)"),
                logger: logger)
        }
        let events = try await count("SELECT locations.rebuild_maps()", on: connection)
        var differences: [String] = []
        for table in Self.mapTables {
            let rows = try await connection.query(
                PostgresQuery(
                    unsafeSQL: """
                        (SELECT 'live only: ' || row_to_json(l)::text FROM (SELECT * FROM \(table)_live EXCEPT ALL SELECT * FROM locations.\(table)) AS l)
                        UNION ALL
                        (SELECT 'rebuilt only: ' || row_to_json(r)::text FROM (SELECT * FROM locations.\(table) EXCEPT ALL SELECT * FROM \(table)_live) AS r)
                        """), logger: logger)
            for try await line in rows.decode(String.self) { differences.append("locations.\(table): \(line)") }
        }
        try await connection.query("ROLLBACK TO SAVEPOINT maps_verify", logger: logger)
        return (events, differences)
    }

    static let mapTables = ["maps", "map_members", "map_invites", "map_removals"]

    private func differences(on connection: PostgresConnection) async throws -> (Int, [String]) {
        let differing = """
            FROM locations.pins l FULL OUTER JOIN locations.pins_verify r ON l.object_id = r.object_id
            WHERE l.object_id IS NULL OR r.object_id IS NULL
               OR (l.unique_key, l.first_name, l.last_name, l.map_string, l.media_url, l.latitude, l.longitude,
                   l.created_at, l.updated_at, l.version, l.map)
                  IS DISTINCT FROM
                  (r.unique_key, r.first_name, r.last_name, r.map_string, r.media_url, r.latitude, r.longitude,
                   r.created_at, r.updated_at, r.version, r.map)
            """
        let count = try await count("SELECT count(*) \(unescaped: differing)", on: connection)
        let rows = try await connection.query(
            """
            SELECT coalesce(l.object_id, r.object_id),
                   CASE WHEN l.object_id IS NULL THEN 'missing from the live read model'
                        WHEN r.object_id IS NULL THEN 'in the live read model but not in the log'
                        ELSE 'differs' END,
                   coalesce(row_to_json(l)::text, '-'), coalesce(row_to_json(r)::text, '-')
            \(unescaped: differing)
            ORDER BY 1 LIMIT 50
            """, logger: logger)
        var lines: [String] = []
        for try await (objectId, kind, live, rebuilt) in rows.decode((String, String, String, String).self) {
            lines.append("\(objectId): \(kind)\n  live:    \(live)\n  rebuilt: \(rebuilt)")
        }
        return (count, lines)
    }

    static let columns = [
        "object_id", "unique_key", "first_name", "last_name", "map_string", "media_url",
        "latitude", "longitude", "created_at", "updated_at", "version", "map",
    ]
}
