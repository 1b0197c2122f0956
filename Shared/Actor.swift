import Foundation

/// The account on whose behalf the gateway calls a service.
///
/// It travels as the `X-Actor` header: base64url without padding of a small JSON object, so names in
/// any script survive HTTP headers.
public struct Actor: Hashable, Sendable, Codable {
    public var key: String
    public var firstName: String
    public var lastName: String

    public init(key: String, firstName: String, lastName: String) {
        self.key = key
        self.firstName = firstName
        self.lastName = lastName
    }

    public var headerValue: String {
        var json = JSONWriter()
        json.beginObject()
        json.field("key", key)
        json.field("firstName", firstName)
        json.field("lastName", lastName)
        json.endObject()
        return Base64URL.encode(json.buffer)
    }

    /// Reads the header; nil when it is not base64url of a JSON actor with a non-empty key.
    public init?(headerValue: String) {
        guard headerValue.utf8.count <= 4096, let bytes = Base64URL.decode(headerValue),
            let actor = try? JSONDecoder().decode(Actor.self, from: Data(bytes)),
            !actor.key.isEmpty
        else { return nil }
        self = actor
    }
}
