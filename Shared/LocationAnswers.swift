import NIOCore

/// The answer to `POST /StudentLocation`. `createAt` repeats `createdAt` for a popular client that misspells it.
public struct PostLocationAnswer: Hashable, Sendable, Codable {
    public var createdAt: Timestamp
    public var objectId: ObjectID

    public init(createdAt: Timestamp, objectId: ObjectID) {
        self.createdAt = createdAt
        self.objectId = objectId
    }

    public var json: ByteBuffer {
        var writer = JSONWriter()
        writer.beginObject()
        writer.field("createdAt", createdAt.iso8601)
        writer.field("objectId", objectId.rawValue)
        writer.field("createAt", createdAt.iso8601)
        writer.endObject()
        return writer.buffer
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

    public var json: ByteBuffer {
        var writer = JSONWriter()
        writer.beginObject()
        writer.field("updatedAt", updatedAt.iso8601)
        writer.field("objectId", objectId.rawValue)
        writer.field("createAt", createAt.iso8601)
        writer.endObject()
        return writer.buffer
    }
}
