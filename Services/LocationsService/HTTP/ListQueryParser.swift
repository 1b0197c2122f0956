import Foundation
import Hummingbird
import HummingbirdCore
import OnTheMapShared

/// Reads the list query clients send: `limit`, `skip`, `order`, `uniqueKey` and Parse's `where`.
///
/// Unknown `order` keys (clients send the typo `-updateAt`) are ignored rather than refused; a query
/// that asks for something we cannot do (a malformed number, an unsupported `where`) is a 400. `now` is the
/// service's time, which `at` may not be after.
enum ListQueryParser {
    static func parse(_ parameters: FlatDictionary<Substring, Substring>, now: Timestamp) throws(LocationError) -> PinQuery {
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
        if let text = parameters["at"] {
            query.at = try moment(String(text), now: now)
        }
        if let text = parameters["uniqueKey"] {
            query.filters[.uniqueKey] = String(text)
        }
        if query.filters.values.contains(where: { $0.contains("\u{0}") }) {
            throw .invalidQuery("uniqueKey must not contain NUL characters.")
        }
        // An empty `where` filters nothing, as Parse took it.
        if let text = parameters["where"], !text.trimmingCharacters(in: .whitespaces).isEmpty {
            let filters: [WhereFilter.Field: String]
            do {
                filters = try WhereFilter.parse(String(text))
            } catch {
                throw .invalidQuery(error.message)
            }
            for (field, value) in filters {
                let key = PinQuery.Key(field)
                if let existing = query.filters[key], existing != value {
                    // Two different required values: nothing can match.
                    query.limit = 0
                }
                query.filters[key] = value
            }
        }
        return query
    }
}

extension ListQueryParser {
    /// `at`: an RFC 3339 time, `2026-11-26T09:30:00Z`, with or without fractions of a second, or with an offset
    /// (`+01:00`; a `+` a client did not percent-encode arrives as a space), or a date alone (its midnight,
    /// UTC); not after now.
    static func moment(_ text: String, now: Timestamp) throws(LocationError) -> Timestamp {
        let spelled = text.trimmingCharacters(in: .whitespaces).replacingOccurrences(of: " ", with: "+").uppercased()
        guard let moment = parseMoment(spelled) else {
            throw .invalidQuery("at must be a time in ISO 8601, such as 2026-11-26T09:30:00Z.")
        }
        guard moment <= now else { throw .invalidQuery("at must not be in the future (it is \(now.iso8601) now).") }
        return moment
    }

    private static func parseMoment(_ text: String) -> Timestamp? {
        if text.utf8.count == 10 { return Timestamp(iso8601: text + "T00:00:00Z") }
        if text.hasSuffix("Z") { return Timestamp(iso8601: text) }
        // `±HH:MM` after the time: the same instant in UTC is the local time less the offset.
        let characters = Array(text)
        guard characters.count > 6, characters[characters.count - 3] == ":", let sign = characters.dropLast(5).last,
            sign == "+" || sign == "-", let hours = Int64(String(characters.suffix(5).prefix(2))),
            let minutes = Int64(String(characters.suffix(2))), hours < 24, minutes < 60,
            let local = Timestamp(iso8601: String(characters.dropLast(6)) + "Z")
        else { return nil }
        let offset = (hours * 60 + minutes) * 60_000
        return Timestamp(millisecondsSince1970: local.millisecondsSince1970 + (sign == "+" ? -offset : offset))
    }
}

extension PinQuery.Key {
    fileprivate init(_ field: WhereFilter.Field) {
        switch field {
        case .objectId: self = .objectId
        case .uniqueKey: self = .uniqueKey
        case .firstName: self = .firstName
        case .lastName: self = .lastName
        case .mapString: self = .mapString
        case .mediaURL: self = .mediaURL
        }
    }
}
