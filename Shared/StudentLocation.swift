import NIOCore

/// One pin, exactly as clients receive it: ten fields, never null.
public struct StudentLocation: Hashable, Sendable, Codable {
    public var objectId: ObjectID
    public var uniqueKey: String
    public var firstName: String
    public var lastName: String
    public var mapString: String
    public var mediaURL: String
    public var latitude: Double
    public var longitude: Double
    public var createdAt: Timestamp
    public var updatedAt: Timestamp

    public init(
        objectId: ObjectID, uniqueKey: String, firstName: String, lastName: String, mapString: String,
        mediaURL: String, latitude: Double, longitude: Double, createdAt: Timestamp, updatedAt: Timestamp
    ) {
        self.objectId = objectId
        self.uniqueKey = uniqueKey
        self.firstName = firstName
        self.lastName = lastName
        self.mapString = mapString
        self.mediaURL = mediaURL
        self.latitude = latitude
        self.longitude = longitude
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    /// Writes the pin in the contract's field order.
    public func write(to json: inout JSONWriter) {
        json.beginObject()
        json.field("objectId", objectId.rawValue)
        json.field("uniqueKey", uniqueKey)
        json.field("firstName", firstName)
        json.field("lastName", lastName)
        json.field("mapString", mapString)
        json.field("mediaURL", mediaURL)
        json.field("latitude", latitude)
        json.field("longitude", longitude)
        json.field("createdAt", createdAt.iso8601)
        json.field("updatedAt", updatedAt.iso8601)
        json.endObject()
    }

    public var json: ByteBuffer {
        var writer = JSONWriter()
        write(to: &writer)
        return writer.buffer
    }
}

/// `{"results":[...]}`, the list envelope.
public struct StudentLocationList: Sendable, Codable, Equatable {
    public var results: [StudentLocation]

    public init(results: [StudentLocation]) { self.results = results }

    public var json: ByteBuffer {
        var writer = JSONWriter(reservingCapacity: 64 + results.count * 320)
        writer.beginObject()
        writer.key("results")
        writer.beginArray()
        for location in results { location.write(to: &writer) }
        writer.endArray()
        writer.endObject()
        return writer.buffer
    }
}
