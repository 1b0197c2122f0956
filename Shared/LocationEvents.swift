import NIOCore

/// What happened to a pin, as recorded in the event log. Each type is stored with a schema version so
/// later readers can upgrade old payloads instead of guessing.
public enum LocationEventType: String, Sendable, Codable, CaseIterable {
    case posted = "LocationPosted"
    case updated = "LocationUpdated"
    case deleted = "LocationDeleted"
    case hidden = "LocationHidden"
    case unhidden = "LocationUnhidden"

    public static let schemaVersion = 1
}

/// `LocationPosted`, `LocationUpdated` and `LocationUnhidden` carry the pin's whole state after the change,
/// so any reader can apply an event without the ones before it. `LocationUnhidden` (an operator put a
/// hidden pin back on the map) carries the state the pin had when it was hidden.
public typealias LocationPosted = StudentLocation
public typealias LocationUpdated = StudentLocation
public typealias LocationUnhidden = StudentLocation

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

/// `LocationHidden`: an operator took the pin off the map, for the reason given. It leaves the map as a
/// deletion does (followers of the log see it as a removal, without the reason); an unhide can bring it back.
public struct LocationHidden: Hashable, Sendable, Codable {
    public var objectId: ObjectID
    public var uniqueKey: String
    public var reason: String
    public var hiddenAt: Timestamp

    public init(objectId: ObjectID, uniqueKey: String, reason: String, hiddenAt: Timestamp) {
        self.objectId = objectId
        self.uniqueKey = uniqueKey
        self.reason = reason
        self.hiddenAt = hiddenAt
    }

    /// The event's payload in the log.
    public var json: ByteBuffer {
        var writer = JSONWriter()
        writer.beginObject()
        writer.field("objectId", objectId.rawValue)
        writer.field("uniqueKey", uniqueKey)
        writer.field("reason", reason)
        writer.field("hiddenAt", hiddenAt.iso8601)
        writer.endObject()
        return writer.buffer
    }

    /// The pin's removal, as followers of the log see it.
    public var removal: LocationDeleted {
        LocationDeleted(objectId: objectId, uniqueKey: uniqueKey, deletedAt: hiddenAt)
    }
}

/// One change to one pin as followers of the log see it (the live feed, replay).
/// A hide is a `.deleted` change and an unhide an `.upserted` one: the event's type tells them apart.
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
