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
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        // Encoding three strings cannot fail.
        let data = (try? encoder.encode(self)) ?? Data("{}".utf8)
        return data.base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// Reads the header; nil when it is not base64url of a JSON actor with a non-empty key.
    public init?(headerValue: String) {
        guard headerValue.utf8.count <= 4096 else { return nil }
        var base64 = headerValue.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.utf8.count % 4 != 0 { base64.append("=") }
        guard let data = Data(base64Encoded: base64),
              let actor = try? JSONDecoder().decode(Actor.self, from: data),
              !actor.key.isEmpty
        else { return nil }
        self = actor
    }
}
