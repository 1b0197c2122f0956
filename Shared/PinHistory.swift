import NIOCore

/// One pin's past, as `GET /v1/StudentLocation/{objectId}/history` answers it: what happened to it, oldest
/// first, each at the moment it took effect: the time the pin carries after it (its `updatedAt`, or when it
/// was deleted or hidden), the moment `?at=` shows the map at.
///
/// ```json
/// {"objectId":"…","results":[
///   {"event":"posted","at":"…","location":{…the pin as posted…}},
///   {"event":"moved","at":"…","changes":{"mapString":{"from":"Lima","to":"Oslo"},"latitude":{"from":-12,"to":59.9}}},
///   {"event":"deleted","at":"…"}]}
/// ```
public struct PinHistory: Sendable, Equatable, Codable {
    public var objectId: ObjectID
    public var results: [Entry]

    public init(objectId: ObjectID, results: [Entry]) {
        self.objectId = objectId
        self.results = results
    }

    public enum Event: String, Sendable, Codable {
        /// The pin was put on the map; `location` is what was posted.
        case posted
        /// Its place changed (`mapString`, `latitude` or `longitude`), perhaps with other fields.
        case moved
        /// Other fields changed (a name, the link), or none.
        case edited
        /// Its owner took it off the map.
        case deleted
        /// An operator took it off the map (why is not public).
        case hidden
        /// An operator put it back as it was; `changes` is empty unless it had been edited since.
        case unhidden
    }

    public struct Entry: Sendable, Equatable, Codable {
        public var event: Event
        public var at: Timestamp
        public var location: StudentLocation?
        public var changes: [String: Change]?

        public init(event: Event, at: Timestamp, location: StudentLocation? = nil, changes: [String: Change]? = nil) {
            self.event = event
            self.at = at
            self.location = location
            self.changes = changes
        }
    }

    /// A field's value before and after.
    public struct Change: Sendable, Equatable, Codable {
        public var from: FieldValue
        public var to: FieldValue

        public init(from: FieldValue, to: FieldValue) {
            self.from = from
            self.to = to
        }
    }

    /// A pin's field: text, or a coordinate.
    public enum FieldValue: Sendable, Equatable, Codable {
        case text(String)
        case number(Double)

        public init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let number = try? container.decode(Double.self) {
                self = .number(number)
            } else {
                self = .text(try container.decode(String.self))
            }
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            switch self {
            case .text(let text): try container.encode(text)
            case .number(let number): try container.encode(number)
            }
        }

        func write(to json: inout JSONWriter) {
            switch self {
            case .text(let text): json.string(text)
            case .number(let number): json.number(number)
            }
        }
    }

    /// The fields a change can touch, in the contract's order, with those that make it a move.
    public static let fields: [(name: String, value: @Sendable (StudentLocation) -> FieldValue, moves: Bool)] = [
        ("firstName", { .text($0.firstName) }, false),
        ("lastName", { .text($0.lastName) }, false),
        ("mapString", { .text($0.mapString) }, true),
        ("mediaURL", { .text($0.mediaURL) }, false),
        ("latitude", { .number($0.latitude) }, true),
        ("longitude", { .number($0.longitude) }, true),
    ]

    /// What changed from `before` to `after`, and whether that moved the pin.
    public static func changes(from before: StudentLocation, to after: StudentLocation) -> (changes: [String: Change], moved: Bool) {
        var changes: [String: Change] = [:]
        var moved = false
        for field in fields {
            let (old, new) = (field.value(before), field.value(after))
            guard old != new else { continue }
            changes[field.name] = Change(from: old, to: new)
            moved = moved || field.moves
        }
        return (changes, moved)
    }

    public var json: ByteBuffer {
        var writer = JSONWriter(reservingCapacity: 128 + results.count * 256)
        writer.beginObject()
        writer.field("objectId", objectId.rawValue)
        writer.key("results")
        writer.beginArray()
        for entry in results {
            writer.beginObject()
            writer.field("event", entry.event.rawValue)
            writer.field("at", entry.at.iso8601)
            if let location = entry.location {
                writer.key("location")
                location.write(to: &writer)
            }
            if let changes = entry.changes {
                writer.key("changes")
                writer.beginObject()
                // In the contract's field order, so the same history is always the same bytes.
                for field in Self.fields {
                    guard let change = changes[field.name] else { continue }
                    writer.key(field.name)
                    writer.beginObject()
                    writer.key("from")
                    change.from.write(to: &writer)
                    writer.key("to")
                    change.to.write(to: &writer)
                    writer.endObject()
                }
                writer.endObject()
            }
            writer.endObject()
        }
        writer.endArray()
        writer.endObject()
        return writer.buffer
    }
}
