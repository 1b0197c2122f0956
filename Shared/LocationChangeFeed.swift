import NIOCore

/// One page of the change feed locations-service offers the gateway: events after a cursor, in commit
/// order, and the cursor to ask from next. Cursors are opaque strings (`<transaction>-<position>`).
public struct LocationChangePage: Codable, Sendable, Equatable {
    public var events: [LocationChangeEvent]
    public var cursor: String
    /// The cursor asked for was older than the window the follower asked to be sent (`within`): the page
    /// lists nothing and its cursor is the head, so the follower reloads the pins instead of reading the log.
    public var reset: Bool
    /// In the class maps' feed (`maps=class`), every class map that moved in the stretch read: its pins or
    /// its own life (settings, members, invites). Empty in a map's own feed.
    public var maps: [String]

    /// The cursor as a position of the log; nil when it is not one.
    public var position: LogPosition? { LogPosition(cursor) }

    public init(events: [LocationChangeEvent], cursor: String, reset: Bool = false, maps: [String] = []) {
        self.events = events
        self.cursor = cursor
        self.reset = reset
        self.maps = maps
    }

    private enum CodingKeys: String, CodingKey {
        case events, cursor, reset, maps
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        events = try container.decode([LocationChangeEvent].self, forKey: .events)
        cursor = try container.decode(String.self, forKey: .cursor)
        reset = try container.decodeIfPresent(Bool.self, forKey: .reset) ?? false
        maps = try container.decodeIfPresent([String].self, forKey: .maps) ?? []
    }

    /// `reset` only when true, and `maps` only when some moved, as `json` writes them.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(events, forKey: .events)
        try container.encode(cursor, forKey: .cursor)
        if reset { try container.encode(true, forKey: .reset) }
        if !maps.isEmpty { try container.encode(maps, forKey: .maps) }
    }

    /// The page as locations-service sends it: what `Codable` reads back, written without `JSONEncoder`,
    /// since a page is written for every few appends while writes pour in.
    public var json: ByteBuffer {
        var writer = JSONWriter(reservingCapacity: 64 + events.count * 400)
        writer.beginObject()
        writer.key("events")
        writer.beginArray()
        for event in events {
            writer.beginObject()
            writer.field("id", event.id)
            writer.field("type", event.type.rawValue)
            if let map = event.map { writer.field("map", map) }
            writer.key(event.location == nil ? "deletion" : "location")
            writer.raw(event.dataJSON)
            writer.endObject()
        }
        writer.endArray()
        writer.field("cursor", cursor)
        if reset {
            writer.key("reset")
            writer.bool(true)
        }
        if !maps.isEmpty {
            writer.key("maps")
            writer.beginArray()
            for map in maps { writer.string(map) }
            writer.endArray()
        }
        writer.endObject()
        return writer.buffer
    }
}

/// One change as the live stream sends it: `id` resumes the stream (`Last-Event-ID`), `type` is the event
/// type, and exactly one of `location` (posted, updated) or `deletion` is present.
public struct LocationChangeEvent: Codable, Sendable, Equatable {
    public var id: String
    public var type: LocationEventType
    public var location: StudentLocation?
    public var deletion: LocationDeleted?
    /// The class map the pin is on, in the class maps' feed; nil in a map's own.
    public var map: String?

    public init(id: String, change: LocationChange, type: LocationEventType, map: String? = nil) {
        self.id = id
        self.type = type
        self.map = map
        switch change {
        case .upserted(let location): self.location = location
        case .deleted(let deletion): self.deletion = deletion
        }
    }

    /// The JSON an SSE `data:` line carries: the pin itself, or the deletion.
    public var dataJSON: ByteBuffer {
        location?.json ?? deletion?.json ?? ByteBuffer(string: "{}")
    }
}
