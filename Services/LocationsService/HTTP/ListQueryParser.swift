import Foundation
import Hummingbird
import HummingbirdCore
import OnTheMapShared

/// Reads the list query clients send: `limit`, `skip`, `order`, `uniqueKey` and Parse's `where`.
///
/// Unknown `order` keys (clients send the typo `-updateAt`) are ignored rather than refused; a query
/// that asks for something we cannot do (a malformed number, an unsupported `where`) is a 400.
enum ListQueryParser {
    static func parse(_ parameters: FlatDictionary<Substring, Substring>) throws(LocationError) -> PinQuery {
        for parameter in ListQueryParameter.allCases {
            if let value = parameters[Substring(parameter.rawValue)], value.utf8.count > parameter.maximumLength {
                throw .invalidQuery(parameter.tooLong)
            }
        }
        var query = PinQuery()
        if let text = parameters["limit"] {
            guard let limit = Int(text.trimmingCharacters(in: .whitespaces)), limit >= 0 else {
                throw .invalidQuery("limit must be a whole number from 0 to \(PinQuery.maximumLimit).")
            }
            query.limit = min(limit, PinQuery.maximumLimit)
        }
        if let text = parameters["skip"] {
            guard let skip = Int(text.trimmingCharacters(in: .whitespaces)), skip >= 0 else {
                throw .invalidQuery("skip must be a whole number, 0 or more.")
            }
            query.skip = skip
        }
        if let text = parameters["order"] {
            let sorts = text.split(separator: ",").compactMap { item -> PinQuery.Sort? in
                var name = item.trimmingCharacters(in: .whitespaces)
                let descending = name.hasPrefix("-")
                if descending { name.removeFirst() }
                return PinQuery.Key(rawValue: name).map { PinQuery.Sort(key: $0, descending: descending) }
            }
            if !sorts.isEmpty { query.order = sorts }
        }
        if let text = parameters["uniqueKey"] {
            query.filters[.uniqueKey] = String(text)
        }
        if query.filters.values.contains(where: { $0.contains("\u{0}") }) {
            throw .invalidQuery("uniqueKey must not contain NUL characters.")
        }
        // An empty `where` filters nothing, as Parse took it.
        if let text = parameters["where"], !text.trimmingCharacters(in: .whitespaces).isEmpty {
            for (key, value) in try whereFilters(String(text)) {
                if let existing = query.filters[key], existing != value {
                    // Two different required values: nothing can match.
                    query.limit = 0
                }
                query.filters[key] = value
            }
        }
        return query
    }

    /// `where={"uniqueKey":"1234"}`: equality on text fields only, as the old Parse clients use it.
    private static func whereFilters(_ text: String) throws(LocationError) -> [PinQuery.Key: String] {
        // Some clients encode spaces in the JSON as `+`, form style.
        let candidates = [text, text.replacingOccurrences(of: "+", with: " ")]
        guard let object = candidates.lazy.compactMap({ candidate in
            (try? JSONSerialization.jsonObject(with: Data(candidate.utf8))) as? [String: Any]
        }).first else {
            throw .invalidQuery("where must be a JSON object such as {\"uniqueKey\":\"1234\"}.")
        }
        var filters: [PinQuery.Key: String] = [:]
        for (name, value) in object {
            guard let key = PinQuery.Key(rawValue: name), key.isFilterable else {
                throw .invalidQuery("where cannot filter on \(name); use uniqueKey, objectId, firstName, lastName, mapString or mediaURL.")
            }
            guard let text = value as? String else {
                throw .invalidQuery("where supports only equality with a string, as in {\"\(name)\":\"value\"}.")
            }
            guard !text.contains("\u{0}") else { throw .invalidQuery("where values must not contain NUL characters.") }
            filters[key] = text
        }
        return filters
    }
}
