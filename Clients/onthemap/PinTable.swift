import Foundation
import OnTheMapShared

/// Pins as an aligned table (name, place, link, age), psql style: on a terminal the widest columns are
/// cut with `…` until the table fits; in a pipe nothing is cut.
enum PinTable {
    static let headers = ["NAME", "PLACE", "LINK", "AGE"]

    static func render(_ pins: [StudentLocation], now: Date = Date(), width: Int?) -> [String] {
        let rows = pins.map { pin in
            [PinLine.name(pin), pin.mapString, pin.mediaURL, age(of: pin.updatedAt.date, now: now)]
        }
        return table(headers: headers, rows: rows, width: width, shrinkable: [2, 1, 0])
    }

    /// Rows padded to their columns' widths; the widest of the `shrinkable` columns are narrowed to fit `width`.
    static func table(headers: [String], rows: [[String]], width: Int?, shrinkable: [Int]) -> [String] {
        var widths = headers.indices.map { column in ([headers] + rows).map { $0[column].count }.max() ?? 0 }
        if let width {
            let separators = 2 * (headers.count - 1)
            var excess = widths.reduce(separators, +) - width
            // The widest column gives up a character at a time, so a long place and a long link end up
            // cut alike rather than one of them to nothing; no column goes below 8.
            let minimum = 8
            while excess > 0, let widest = shrinkable.filter({ widths[$0] > minimum }).max(by: { widths[$0] < widths[$1] }) {
                widths[widest] -= 1
                excess -= 1
            }
        }
        func line(_ cells: [String]) -> String {
            var text = ""
            for (column, cell) in cells.enumerated() {
                let fitted = fit(cell, widths[column])
                let last = column == cells.count - 1
                text += last ? fitted : fitted.padding(toLength: widths[column], withPad: " ", startingAt: 0) + "  "
            }
            // An empty last cell leaves no padding behind it.
            while text.hasSuffix(" ") { text.removeLast() }
            return text
        }
        return [Terminal.style(line(headers), .bold)] + rows.map(line)
    }

    static func fit(_ text: String, _ width: Int) -> String {
        text.count <= width ? text : String(text.prefix(max(width - 1, 0))) + "…"
    }

    /// "just now", "3 min ago", "5 h ago", "2 days ago", then the date.
    static func age(of date: Date, now: Date = Date()) -> String {
        let seconds = Int(now.timeIntervalSince(date))
        switch seconds {
        case ..<60: return "just now"
        case ..<3600: return "\(seconds / 60) min ago"
        case ..<86_400: return "\(seconds / 3600) h ago"
        case ..<(86_400 * 2): return "1 day ago"
        case ..<(86_400 * 30): return "\(seconds / 86_400) days ago"
        default: return String(Timestamp(date).iso8601.prefix(10))
        }
    }
}

/// One pin in one line, the way `watch` and the prompts show it.
enum PinLine {
    static func name(_ pin: StudentLocation) -> String {
        let name = [pin.firstName, pin.lastName].filter { !$0.isEmpty }.joined(separator: " ")
        return name.isEmpty ? pin.uniqueKey : name
    }

    /// `Ada Lovelace · Berlin, Germany · https://…`
    static func describe(_ pin: StudentLocation) -> String {
        "\(name(pin)) · \(pin.mapString) · \(pin.mediaURL)"
    }

    static func coordinates(_ latitude: Double, _ longitude: Double) -> String {
        String(format: "%.4f, %.4f", latitude, longitude)
    }
}
