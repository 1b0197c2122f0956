/// The answer to `POST /StudentLocation`. `createAt` repeats `createdAt` for a popular client that misspells it.
public struct PostLocationAnswer: Hashable, Sendable, Codable {
    public var createdAt: Timestamp
    public var objectId: ObjectID

    public init(createdAt: Timestamp, objectId: ObjectID) {
        self.createdAt = createdAt
        self.objectId = objectId
    }

    public var jsonBytes: [UInt8] {
        var json = JSONWriter()
        json.beginObject()
        json.field("createdAt", createdAt.iso8601)
        json.field("objectId", objectId.rawValue)
        json.field("createAt", createdAt.iso8601)
        json.endObject()
        return json.bytes
    }
}

/// The answer to `PUT /StudentLocation/{id}`; it also carries the POST answer's keys because the same
/// client decodes it with its POST type.
public struct PutLocationAnswer: Hashable, Sendable, Codable {
    public var updatedAt: Timestamp
    public var objectId: ObjectID
    public var createAt: Timestamp

    public init(updatedAt: Timestamp, objectId: ObjectID, createAt: Timestamp) {
        self.updatedAt = updatedAt
        self.objectId = objectId
        self.createAt = createAt
    }

    public var jsonBytes: [UInt8] {
        var json = JSONWriter()
        json.beginObject()
        json.field("updatedAt", updatedAt.iso8601)
        json.field("objectId", objectId.rawValue)
        json.field("createAt", createAt.iso8601)
        json.endObject()
        return json.bytes
    }
}
