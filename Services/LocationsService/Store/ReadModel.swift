import Foundation
import Logging
import OnTheMapShared
import PostgresNIO
import ServiceKit

/// Reads the current pins from `locations.pins`, the projection `EventStore` keeps up to date.
struct ReadModel: Sendable {
    let database: Database

    static let columns = """
        object_id, unique_key, first_name, last_name, map_string, media_url, latitude, longitude, created_at, updated_at, version, map
        """

    struct Pin: Sendable, Hashable {
        var location: StudentLocation
        /// The stream version of the last event applied: the pin's ETag and its `If-Match` value.
        var version: Int
        /// The map the pin is on (`''`: the default map).
        var map: String = ""
    }

    func pin(_ objectId: ObjectID) async throws -> Pin? {
        let rows = try await database.query(
            """
            SELECT \(unescaped: Self.columns) FROM locations.pins WHERE object_id = \(objectId.rawValue)
            """)
        return try rows.first.map(Self.pin(from:))
    }

    /// The pins `query` asks for: from the read model, or with `at`, from the versions valid at that moment
    /// (`locations.pin_versions`) of the pins not hidden now, whose `updated_at` is never later than the moment it took effect, so the
    /// newest-first walk starts at the moment asked for.
    func pins(_ query: PinQuery) async throws -> [StudentLocation] {
        var sql = "SELECT \(Self.columns) FROM \(query.at == nil ? "locations.pins" : "locations.pin_versions")"
        var bindings = PostgresBindings()
        // Sorted so equal queries make equal SQL text.
        bindings.append(query.map)
        var clauses = ["map = $1"]
        clauses += query.filters.sorted { $0.key.rawValue < $1.key.rawValue }.map { key, value in
            bindings.append(value)
            return "\(key.column) = $\(bindings.count)"
        }
        if let at = query.at {
            // In whole milliseconds, exact (a `Date` would go through a double on its way to microseconds),
            // and made a timestamp by an immutable function, so the planner compares the index with a constant.
            bindings.append(at.millisecondsSince1970)
            let moment = "to_timestamp($\(bindings.count)::float8 / 1000)"
            clauses += ["valid_from <= \(moment)", "(valid_until IS NULL OR valid_until > \(moment))", "updated_at <= \(moment)"]
            // A pin hidden now is hidden at every moment, as `locations.pins` has no row of it.
            clauses.append("NOT EXISTS (SELECT FROM locations.hidden_pins AS hidden WHERE hidden.object_id = pin_versions.object_id)")
        }
        sql += " WHERE " + clauses.joined(separator: " AND ")
        var order = query.order.map { "\($0.key.column) \($0.descending ? "DESC" : "ASC")" }
        if !query.order.contains(where: { $0.key == .objectId }) {
            // A total order, so pages never repeat or skip a pin.
            order.append("object_id \(query.order.first?.descending == false ? "ASC" : "DESC")")
        }
        sql += " ORDER BY " + order.joined(separator: ", ")
        bindings.append(query.limit)
        sql += " LIMIT $\(bindings.count)"
        bindings.append(query.skip)
        sql += " OFFSET $\(bindings.count)"
        let rows = try await database.query(PostgresQuery(unsafeSQL: sql, binds: bindings))
        return try rows.map { try Self.pin(from: $0).location }
    }

    /// Where the log and this model stand: the log's head position, the pins, the position the last
    /// replay rebuilt the model to (0 when none has), and the pins the cap on pins per student took off.
    func standing() async throws -> (head: Int64, pins: Int64, replayed: Int64, capped: Int64) {
        let rows = try await database.query(
            """
            SELECT (SELECT coalesce(max(position), 0) FROM locations.events),
                   (SELECT count(*) FROM locations.pins),
                   (SELECT coalesce(max(position), 0) FROM locations.projection_checkpoints WHERE projection = 'pins'),
                   (SELECT count(*) FROM locations.events WHERE metadata->>'reason' = 'pinCap')
            """)
        guard let row = rows.first else { return (0, 0, 0, 0) }
        return try row.decode((Int64, Int64, Int64, Int64).self)
    }

    static func pin(from row: PostgresRow) throws -> Pin {
        let (objectId, uniqueKey, firstName, lastName, mapString, mediaURL, latitude, longitude, createdAt, updatedAt, version, map) =
            try row.decode((String, String, String, String, String, String, Double, Double, Date, Date, Int, String).self)
        return Pin(
            location: StudentLocation(
                objectId: ObjectID(objectId), uniqueKey: uniqueKey, firstName: firstName, lastName: lastName,
                mapString: mapString, mediaURL: mediaURL, latitude: latitude, longitude: longitude,
                createdAt: Timestamp(createdAt), updatedAt: Timestamp(updatedAt)), version: version, map: map)
    }
}
