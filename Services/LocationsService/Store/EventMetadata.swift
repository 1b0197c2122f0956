import OnTheMapShared

/// Who caused an event and through which request; stored beside every event as JSON.
struct EventMetadata: Sendable, Codable, Hashable {
    var actor: Actor
    var requestId: String?
    var idempotencyKey: String?
    var userAgent: String?
    /// SHA-256 of the request body, so a reused idempotency key with a different body is caught.
    var requestHash: String?
    /// The map the event is on (`''`: the default map): the log's `map` column, not part of the JSON.
    var map: String = ""

    var json: String {
        var json = JSONWriter()
        json.beginObject()
        json.key("actor")
        json.beginObject()
        json.field("key", actor.key)
        json.field("firstName", actor.firstName)
        json.field("lastName", actor.lastName)
        json.endObject()
        if let requestId { json.field("requestId", requestId) }
        if let idempotencyKey { json.field("idempotencyKey", idempotencyKey) }
        if let userAgent { json.field("userAgent", userAgent) }
        if let requestHash { json.field("requestHash", requestHash) }
        json.endObject()
        return json.string
    }
}
