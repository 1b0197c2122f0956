/// The name of a class map in its paths (`/maps/{slug}/`): 3 to 40 of `a-z`, `0-9` and `-`, beginning and
/// ending with a letter or a digit, with no `--`. Checked byte for byte, never folded: `IOS-2027`, a
/// percent-encoded or look-alike spelling is not a slug, so it names no map (404), and no two spellings can
/// ever reach one map. The default map (today's, at `/`) has no slug.
public struct MapSlug: Hashable, Sendable, Comparable, CustomStringConvertible {
    public let rawValue: String

    public static let minimumLength = 3
    public static let maximumLength = 40
    /// Words a map may not be called: the paths of the gateway's own pages, and the default map's name.
    public static let reserved: Set<String> = ["default", "new", "join", "maps", "me", "v1", "api", "admin", "web"]

    /// Nil unless `text` is a slug as written in a path. Reserved words pass here (a path may name them and
    /// find no map); creation refuses them (`isReserved`).
    public init?(_ text: some StringProtocol) {
        // Over the bytes of the string kept, with no array of them: a map's hot read checks its slug on every request.
        let string = String(text)
        let bytes = string.utf8
        guard (Self.minimumLength...Self.maximumLength).contains(bytes.count),
            let first = bytes.first, let last = bytes.last, Self.isLetterOrDigit(first), Self.isLetterOrDigit(last)
        else { return nil }
        var previous: UInt8 = 0
        for byte in bytes {
            guard Self.isLetterOrDigit(byte) || byte == UInt8(ascii: "-") else { return nil }
            if byte == UInt8(ascii: "-") && previous == byte { return nil }
            previous = byte
        }
        rawValue = string
    }

    public var isReserved: Bool { Self.reserved.contains(rawValue) }

    /// The map's web page and the base URL its apps use.
    public var path: String { "/maps/\(rawValue)/" }

    /// The name of the log stream that holds the map's own life (created, settings, members, invites).
    public var streamName: String { "map-\(rawValue)" }

    public var description: String { rawValue }

    public static func < (lhs: MapSlug, rhs: MapSlug) -> Bool { lhs.rawValue < rhs.rawValue }

    /// What a refused slug is told: the rule in one sentence.
    public static let rule =
        "A map's slug is 3 to 40 lowercase letters, digits and hyphens, beginning and ending with a letter or digit, with no double hyphen."

    private static func isLetterOrDigit(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
    }
}

extension MapSlug {
    /// How many class maps' newest pins each service keeps in memory by default (`MAP_CACHE_SIZE`): a
    /// school's classes that are in session at once, each list about 35 KB.
    public static let defaultCacheSize = 256
}
