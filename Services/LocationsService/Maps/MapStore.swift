import Foundation
import OnTheMapShared
import PostgresNIO
import ServiceKit

/// The maps in PostgreSQL: their events appended to the log (each checked against its stream's version,
/// as a pin's are), and their read models (`locations.maps`, `map_members`, `map_invites`,
/// `map_removals`), which the append's own statement keeps (`locations.apply_map_event`).
struct MapStore: Sendable {
    let database: Database

    private static let mapColumns =
        "slug, name, read, post, pins_per_student, approval, created_at, deleted_at IS NOT NULL, version"

    /// The map and the caller's role on it; nil when no map has this slug, or it was deleted.
    func access(_ slug: MapSlug, actorKey: String?) async throws -> MapAccess? {
        let rows = try await database.query(
            """
            SELECT \(unescaped: Self.mapColumns), member.role
            FROM locations.maps
            LEFT JOIN locations.map_members AS member ON member.map = maps.slug AND member.account_key = \(actorKey ?? "")
            WHERE maps.slug = \(slug.rawValue) AND maps.deleted_at IS NULL
            """)
        guard let row = rows.first else { return nil }
        let columns = row.makeRandomAccess()
        return MapAccess(
            map: try Self.map(from: row), role: try columns[9].decode(String?.self).flatMap(MapRole.init(rawValue:)),
            signedIn: actorKey != nil)
    }

    /// `access`, for a cache's key (`cacheKey`).
    func access(cachedAs key: String) async throws -> MapAccess? {
        let parts = key.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, let slug = MapSlug(parts[0]) else { return nil }
        return try await access(slug, actorKey: parts[1].isEmpty ? nil : String(parts[1]))
    }

    /// The key a cache of `access` keeps one caller's access to one map under.
    static func cacheKey(_ slug: MapSlug, actorKey: String?) -> String { slug.rawValue + "\n" + (actorKey ?? "") }

    /// The maps `actorKey` is on, in any role, newest first.
    func maps(of actorKey: String) async throws -> [(MapRecord, MapRole?)] {
        let rows = try await database.query(
            """
            SELECT \(unescaped: Self.mapColumns), member.role
            FROM locations.map_members AS member JOIN locations.maps ON maps.slug = member.map
            WHERE member.account_key = \(actorKey) AND maps.deleted_at IS NULL
            ORDER BY maps.created_at DESC, maps.slug
            LIMIT 1000
            """)
        return try rows.map { row in
            (try Self.map(from: row), MapRole(rawValue: try row.makeRandomAccess()[9].decode(String.self)))
        }
    }

    /// The map's members in the order they joined; with `key`, that one alone.
    func members(of slug: MapSlug, key: String? = nil) async throws -> [MapMember] {
        let rows = try await database.query(
            """
            SELECT account_key, first_name, last_name, role, joined_at FROM locations.map_members
            WHERE map = \(slug.rawValue) AND (\(key == nil) OR account_key = \(key ?? ""))
            ORDER BY joined_at, account_key
            """)
        return try rows.map { row in
            let (key, firstName, lastName, role, joinedAt) = try row.decode((String, String, String, String, Date).self)
            return MapMember(
                key: key, firstName: firstName, lastName: lastName, role: MapRole(rawValue: role) ?? .pending, joinedAt: Timestamp(joinedAt))
        }
    }

    func member(_ key: String, of slug: MapSlug) async throws -> MapMember? {
        try await members(of: slug, key: key).first
    }

    /// The map's invites, newest first; with `code`, that one alone.
    func invites(of slug: MapSlug, code: String? = nil) async throws -> [MapInvite] {
        let rows = try await database.query(
            """
            SELECT code, created_at, expires_at, uses, used, revoked_at IS NOT NULL FROM locations.map_invites
            WHERE map = \(slug.rawValue) AND (\(code == nil) OR code = \(code ?? ""))
            ORDER BY created_at DESC, code
            """)
        return try rows.map { row in
            let (code, createdAt, expiresAt, uses, used, revoked) = try row.decode((String, Date, Date?, Int?, Int, Bool).self)
            return MapInvite(
                code: code, createdAt: Timestamp(createdAt), expiresAt: expiresAt.map(Timestamp.init), uses: uses, used: used, revoked: revoked)
        }
    }

    /// When `key` was last removed from the map, if ever.
    func removal(of key: String, from slug: MapSlug) async throws -> Timestamp? {
        let rows = try await database.query(
            "SELECT removed_at FROM locations.map_removals WHERE map = \(slug.rawValue) AND account_key = \(key)")
        return try rows.first.map { Timestamp(try $0.decode(Date.self)) }
    }

    /// The map's pins hidden now, each as it was hidden, with the hide's reason, moment and moderator.
    func hidden(on slug: MapSlug) async throws -> [HiddenPin] {
        let rows = try await database.query(
            """
            SELECT shown.data::text, hide.data->>'reason', hide.data->>'hiddenAt', hide.actor_key
            FROM locations.hidden_pins AS hidden
            CROSS JOIN LATERAL (
                SELECT data, actor_key, stream_name, stream_version, map FROM locations.events
                WHERE stream_name = 'location-' || hidden.object_id ORDER BY stream_version DESC LIMIT 1
            ) AS hide
            CROSS JOIN LATERAL (
                SELECT data FROM locations.events
                WHERE stream_name = hide.stream_name AND event_type IN ('LocationPosted', 'LocationUpdated', 'LocationUnhidden')
                ORDER BY stream_version DESC LIMIT 1
            ) AS shown
            WHERE hide.map = \(slug.rawValue)
            ORDER BY hide.data->>'hiddenAt' DESC
            LIMIT 1000
            """)
        return try rows.map { row in
            let (pin, reason, hiddenAt, hiddenBy) = try row.decode((String, String, String, String).self)
            return HiddenPin(
                pin: try JSONDecoder().decode(StudentLocation.self, from: Data(pin.utf8)), reason: reason,
                hiddenAt: Timestamp(iso8601: hiddenAt) ?? Timestamp(millisecondsSince1970: 0), hiddenBy: hiddenBy)
        }
    }

    /// One event of the map's life at `expectedVersion + 1` (0: the map's first). `.versionConflict` when
    /// another got there first; `MapStoreError.slugTaken` when a map (a deleted one too) has the slug.
    func append(
        _ type: MapEventType, data: String, to slug: MapSlug, expectedVersion: Int, metadata: EventMetadata
    ) async throws {
        try await appending(slug) {
            try await database.write(
                """
                INSERT INTO locations.events
                    (stream_name, stream_version, event_type, schema_version, data, metadata, actor_key, idempotency_key, map)
                SELECT \(slug.streamName), \(expectedVersion + 1), \(type.rawValue), 1, \(data)::jsonb, \(metadata.json)::jsonb,
                       \(metadata.actor.key), NULL, \(slug.rawValue)
                WHERE \(expectedVersion) = 0
                   OR EXISTS (SELECT FROM locations.events WHERE stream_name = \(slug.streamName) AND stream_version = \(expectedVersion))
                RETURNING position
                """)
        }
    }

    /// A member leaves, or is removed (`type`), at `expectedVersion + 1`; in the same statement each of
    /// their pins on the map leaves it as a deletion would (a `LocationDeleted` whose metadata says why).
    /// Answers how many pins left.
    func depart(
        _ type: MapEventType, data: String, member: String, from slug: MapSlug, expectedVersion: Int, at moment: Timestamp,
        metadata: EventMetadata
    ) async throws -> Int {
        let reason = type == .memberRemoved ? "removed" : "left"
        let rows = try await appending(slug) {
            try await database.write(
                """
                WITH departed AS (
                    INSERT INTO locations.events
                        (stream_name, stream_version, event_type, schema_version, data, metadata, actor_key, idempotency_key, map)
                    SELECT \(slug.streamName), \(expectedVersion + 1), \(type.rawValue), 1, \(data)::jsonb, \(metadata.json)::jsonb,
                           \(metadata.actor.key), NULL, \(slug.rawValue)
                    WHERE EXISTS (SELECT FROM locations.events WHERE stream_name = \(slug.streamName) AND stream_version = \(expectedVersion))
                    RETURNING position
                ), theirs AS (
                    SELECT object_id, unique_key, version FROM locations.pins
                    WHERE map = \(slug.rawValue) AND unique_key = \(member) AND EXISTS (SELECT FROM departed)
                ), deleted AS (
                    INSERT INTO locations.events
                        (stream_name, stream_version, event_type, schema_version, data, metadata, actor_key, idempotency_key, map)
                    SELECT 'location-' || object_id, version + 1, \(LocationEventType.deleted.rawValue), \(LocationEventType.schemaVersion),
                           jsonb_build_object('objectId', object_id, 'uniqueKey', unique_key, 'deletedAt', \(moment.iso8601)::text),
                           \(metadata.json)::jsonb || jsonb_build_object('reason', \(reason)::text), \(metadata.actor.key), NULL,
                           \(slug.rawValue)
                    FROM theirs ORDER BY object_id
                    RETURNING 1
                ), gone AS (
                    DELETE FROM locations.pins WHERE object_id IN (SELECT object_id FROM theirs)
                )
                SELECT (SELECT count(*) FROM deleted) FROM departed
                """)
        }
        return try rows.first?.decode(Int.self) ?? 0
    }

    /// `locations.delete_map`: the map and everything on it gone but a `MapDeleted` and one deletion per
    /// pin. Nil when there is no such map.
    func delete(_ slug: MapSlug, at moment: Timestamp, metadata: EventMetadata) async throws -> Int? {
        let rows = try await database.write(
            """
            SELECT locations.delete_map(\(slug.rawValue), \(moment.iso8601)::timestamptz, \(metadata.actor.key), \(metadata.json)::jsonb)
            """)
        return try rows.first?.decode(Int?.self)
    }

    /// Runs an append, turning "no row" into a version conflict and a unique clash into its meaning.
    @discardableResult
    private func appending(_ slug: MapSlug, _ statement: () async throws -> [PostgresRow]) async throws -> [PostgresRow] {
        let rows: [PostgresRow]
        do {
            rows = try await statement()
        } catch let error as PSQLError where error.serverInfo?[.sqlState] == "23505" {
            throw error.serverInfo?[.constraintName] == "maps_pkey" ? MapStoreError.slugTaken : EventStore.AppendError.versionConflict
        }
        guard !rows.isEmpty else { throw EventStore.AppendError.versionConflict }
        return rows
    }

    private static func map(from row: PostgresRow) throws -> MapRecord {
        let columns = row.makeRandomAccess()
        let slug = try columns[0].decode(String.self)
        return MapRecord(
            slug: MapSlug(slug) ?? MapSlug("invalid-slug")!, name: try columns[1].decode(String.self),
            read: MapReaders(rawValue: try columns[2].decode(String.self)) ?? .members,
            post: MapPosters(rawValue: try columns[3].decode(String.self)) ?? .members,
            pinsPerStudent: try columns[4].decode(Int?.self), approval: try columns[5].decode(Bool.self),
            createdAt: Timestamp(try columns[6].decode(Date.self)), deleted: try columns[7].decode(Bool.self),
            version: try columns[8].decode(Int.self))
    }
}

enum MapStoreError: Error {
    case slugTaken
}
