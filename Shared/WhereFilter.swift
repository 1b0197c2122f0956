import Foundation

/// Parse's `where={"uniqueKey":"1234"}` list filter: equality on text fields only, as the old Parse
/// clients use it.
public enum WhereFilter {
    /// The pin fields a `where` may test for equality.
    public enum Field: String, CaseIterable, Hashable, Sendable {
        case objectId, uniqueKey, firstName, lastName, mapString, mediaURL
    }

    /// Why a `where` cannot be used, in words for the client.
    public struct Invalid: Error, Hashable, Sendable {
        public let message: String
    }

    /// The required value of each field the filter names.
    public static func parse(_ text: String) throws(Invalid) -> [Field: String] {
        // Some clients encode spaces in the JSON as `+`, form style.
        let candidates = [text, text.replacingOccurrences(of: "+", with: " ")]
        guard let conditions = candidates.lazy.compactMap({ try? JSONDecoder().decode(Conditions.self, from: Data($0.utf8)) }).first else {
            throw Invalid(message: "where must be a JSON object such as {\"uniqueKey\":\"1234\"}.")
        }
        var filters: [Field: String] = [:]
        for (name, value) in conditions.pairs {
            guard let field = Field(rawValue: name) else {
                throw Invalid(message: "where cannot filter on \(name); use uniqueKey, objectId, firstName, lastName, mapString or mediaURL.")
            }
            guard let text = value else {
                throw Invalid(message: "where supports only equality with a string, as in {\"\(name)\":\"value\"}.")
            }
            guard !text.contains("\u{0}") else { throw Invalid(message: "where values must not contain NUL characters.") }
            filters[field] = text
        }
        return filters
    }

    /// The object a `where` holds: each key with its value if that is a string.
    private struct Conditions: Decodable {
        struct Key: CodingKey {
            var stringValue: String
            var intValue: Int? { nil }
            init(stringValue: String) { self.stringValue = stringValue }
            init?(intValue: Int) { nil }
        }
        var pairs: [(name: String, value: String?)]

        init(from decoder: any Decoder) throws {
            let fields = try decoder.container(keyedBy: Key.self)
            pairs = fields.allKeys.map { ($0.stringValue, fields.stringIfPresent($0)) }
        }
    }
}
