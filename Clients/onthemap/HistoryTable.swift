import OnTheMapShared

/// A pin's history as an aligned table, oldest first: when (a moment `list --at` takes), what happened,
/// and the place or what changed.
enum HistoryTable {
    static let headers = ["TIME", "EVENT", "DETAILS"]

    static func render(_ history: PinHistory, width: Int?) -> [String] {
        let rows = history.results.map { entry in [entry.at.iso8601, entry.event.rawValue, details(entry)] }
        return PinTable.table(headers: headers, rows: rows, width: width, shrinkable: [2])
    }

    /// `Ada Lovelace · Berlin, Germany · https://…` for a posted pin; `place Berlin → Paris · latitude 52.52 → 48.85`
    /// for a change, in the contract's field order.
    static func details(_ entry: PinHistory.Entry) -> String {
        var parts: [String] = []
        if let location = entry.location { parts.append(PinLine.describe(location)) }
        for field in PinHistory.fields {
            guard let change = entry.changes?[field.name] else { continue }
            parts.append("\(label(field.name)) \(text(change.from)) → \(text(change.to))")
        }
        if parts.isEmpty, entry.event == .hidden { parts.append("taken off the map by an operator") }
        return parts.joined(separator: " · ")
    }

    static func label(_ field: String) -> String {
        switch field {
        case "firstName": "first name"
        case "lastName": "last name"
        case "mapString": "place"
        case "mediaURL": "link"
        default: field
        }
    }

    static func text(_ value: PinHistory.FieldValue) -> String {
        switch value {
        case .text(let text): text.isEmpty ? "(none)" : text
        case .number(let number): String(number)
        }
    }
}
