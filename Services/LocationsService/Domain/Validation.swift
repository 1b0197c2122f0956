import Foundation
import OnTheMapShared

/// The rules a pin must satisfy before anything is written.
enum Validation {
    static let maximumNameLength = 100
    static let maximumMapStringLength = 200
    static let maximumURLLength = 2048

    static func mapString(_ text: String) throws(LocationError) -> String {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else { throw .invalid("mapString must not be empty.") }
        try printable(trimmed, field: "mapString")
        guard trimmed.count <= maximumMapStringLength else {
            throw .invalid("mapString must be at most \(maximumMapStringLength) characters.")
        }
        return trimmed
    }

    static func name(_ text: String, field: String) throws(LocationError) -> String {
        try printable(text, field: field)
        guard text.count <= maximumNameLength else { throw .invalid("\(field) must be at most \(maximumNameLength) characters.") }
        return text
    }

    /// Control characters have no place in a place name or a person's name (and PostgreSQL text cannot
    /// hold NUL at all).
    static func printable(_ text: String, field: String) throws(LocationError) {
        guard !text.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
            throw .invalid("\(field) must not contain control characters.")
        }
    }

    static func latitude(_ value: Double) throws(LocationError) -> Double {
        guard value.isFinite, (-90...90).contains(value) else { throw .invalid("latitude must be a number from -90 to 90.") }
        return value
    }

    static func longitude(_ value: Double) throws(LocationError) -> Double {
        guard value.isFinite, (-180...180).contains(value) else { throw .invalid("longitude must be a number from -180 to 180.") }
        return value
    }

    /// An absolute http(s) URL that goes where it reads. A bare domain (`udacity.com/path`) gets `https://`
    /// in front; any other scheme (`javascript:`, `data:`, `ftp:`) is refused, so nothing but a web link is
    /// ever stored. Parsers disagree on credentials (`https://example.com@evil.example/` leads to
    /// evil.example), on backslashes (browsers read `\` as `/`, others as part of the host) and on what
    /// whitespace and control characters end, so a link holding any of them is refused rather than read
    /// one way here and another way in a browser.
    static func mediaURL(_ text: String) throws(LocationError) -> String {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else { throw .invalid("mediaURL must not be empty.") }
        let candidate = hasScheme(trimmed) ? trimmed : "https://" + trimmed
        guard candidate.utf8.count <= maximumURLLength else {
            throw .invalid("mediaURL must be at most \(maximumURLLength) characters.")
        }
        guard !candidate.unicodeScalars.contains(where: isAmbiguous),
            let components = URLComponents(string: candidate),
            let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https",
            let host = components.host, isPlausibleHost(host)
        else { throw .invalid("mediaURL must be a web link such as https://example.com.") }
        guard !authority(of: candidate).contains("@") else {
            throw .invalid("mediaURL must not hold a user name or password.")
        }
        return candidate
    }

    /// Characters a link must not hold: whitespace, control characters (C0, DEL and C1) and backslashes.
    private static func isAmbiguous(_ scalar: Unicode.Scalar) -> Bool {
        CharacterSet.whitespacesAndNewlines.contains(scalar) || scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) || scalar == "\\"
    }

    /// What follows `scheme://` up to the path, query or fragment, as written: where a user name would sit,
    /// whatever `URLComponents` made of it.
    private static func authority(of link: String) -> Substring {
        guard let start = link.range(of: "://")?.upperBound else { return "" }
        return link[start...].prefix { $0 != "/" && $0 != "?" && $0 != "#" }
    }

    /// `scheme:` at the start, as RFC 3986 spells it, and not `host:port`.
    private static func hasScheme(_ text: String) -> Bool {
        guard let colon = text.firstIndex(of: ":") else { return false }
        let scheme = text[..<colon]
        guard let first = scheme.unicodeScalars.first, CharacterSet.letters.contains(first),
            scheme.unicodeScalars.allSatisfy({ CharacterSet.alphanumerics.contains($0) || "+-.".unicodeScalars.contains($0) })
        else { return false }
        // `example.com:8080/path` is a bare host with a port, not a scheme named `example.com`.
        let rest = text[text.index(after: colon)...]
        let port = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        return !(scheme.contains(".") && !port.isEmpty && port.allSatisfy(\.isNumber))
    }

    /// A name a browser can look up: dot-separated labels of letters (of any script), digits and hyphens, or
    /// `localhost`, or an IPv6 literal. `URLComponents` takes what RFC 3986 allows in a host (`*`, `!`, `'`…),
    /// which no name can hold.
    private static func isPlausibleHost(_ host: String) -> Bool {
        guard !host.isEmpty, host.utf8.count <= 253 else { return false }
        if host == "localhost" || host.hasPrefix("[") { return true }
        let labels = host.split(separator: ".", omittingEmptySubsequences: false)
        return labels.count > 1
            && labels.allSatisfy { label in
                !label.isEmpty && label.unicodeScalars.allSatisfy { CharacterSet.alphanumerics.contains($0) || $0 == "-" }
            }
    }
}
