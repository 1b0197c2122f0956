import NIOCore

/// What happened to a pin, as recorded in the event log. Each type is stored with a schema version so
/// later readers can upgrade old payloads instead of guessing.
public enum LocationEventType: String, Sendable, Codable, CaseIterable {
    case posted = "LocationPosted"
    case updated = "LocationUpdated"
    case deleted = "LocationDeleted"

    public static let schemaVersion = 1
}

/// `LocationPosted` and `LocationUpdated` both carry the pin's whole state after the change, so any
/// reader can apply an event without the ones before it.
public typealias LocationPosted = StudentLocation
public typealias LocationUpdated = StudentLocation

/// `LocationDeleted`: the pin is gone from the map; its history stays in the log.
public struct LocationDeleted: Hashable, Sendable, Codable {
    public var objectId: ObjectID
    public var uniqueKey: String
    public var deletedAt: Timestamp

    public init(objectId: ObjectID, uniqueKey: String, deletedAt: Timestamp) {
        self.objectId = objectId
        self.uniqueKey = uniqueKey
        self.deletedAt = deletedAt
    }

    /// The event's payload in the log, and the `data:` of its live-feed event.
    public var json: ByteBuffer {
        var writer = JSONWriter()
        writer.beginObject()
        writer.field("objectId", objectId.rawValue)
        writer.field("uniqueKey", uniqueKey)
        writer.field("deletedAt", deletedAt.iso8601)
        writer.endObject()
        return writer.buffer
    }
}

/// One change to one pin as followers of the log see it (the live feed, replay).
public enum LocationChange: Hashable, Sendable {
    case upserted(StudentLocation)
    case deleted(LocationDeleted)

    public var objectId: ObjectID {
        switch self {
        case .upserted(let location): location.objectId
        case .deleted(let deletion): deletion.objectId
        }
    }
}
