import HTTPTypes
import NIOHTTP1

/// Headers as they arrived, read by field name: HTTP/1's parser's own list, looked up in place, or fields (an
/// HTTP/2 stream's, the router's, a test's). The list is made into `HTTPFields` only when every header is
/// wanted: a request answered from memory reads two or three of its headers, the gateway's relay of
/// locations-service's answer four, and turning every line into a field first would cost more than that.
public struct ParsedHeaders: Sendable {
    private enum Storage: Sendable {
        /// As HTTP/1's parser made them, with where the headers the doors read are among them.
        case list(HTTPHeaders, Lines)
        case fields(HTTPFields)
    }

    private let storage: Storage

    /// The parser's list: a request's, or at the gateway's hop an answer's.
    public init(_ list: HTTPHeaders) {
        storage = .list(list, Lines(list))
    }

    public init(_ fields: HTTPFields) {
        storage = .fields(fields)
    }

    /// Every header, made from the parser's list when it is asked for.
    public var fields: HTTPFields {
        switch storage {
        case .list(let list, _): HTTPFields(parsed: list)
        case .fields(let fields): fields
        }
    }

    /// The value of every line of `name`, joined as `HTTPFields` joins them (`; ` for cookies, `, ` for the
    /// rest); nil when there is none.
    public subscript(name: HTTPField.Name) -> String? {
        switch storage {
        case .fields(let fields):
            return fields[name]
        case .list(let list, let lines):
            var found: String?
            Self.eachValue(of: name, in: list, lines) { value in
                found = found.map { $0 + (name == .cookie ? "; " : ", ") + value } ?? value
            }
            return found
        }
    }

    /// Each line named one of `names`, as it was sent (a name's lines are not joined), in the order of
    /// `names` and then of the lines.
    public func fields(named names: [HTTPField.Name]) -> [HTTPField] {
        var found: [HTTPField] = []
        // One more: a relay adds its own header.
        found.reserveCapacity(names.count + 1)
        switch storage {
        case .fields(let fields):
            for name in names {
                for field in fields where field.name == name { found.append(field) }
            }
        case .list(let list, let lines):
            for name in names {
                Self.eachValue(of: name, in: list, lines) { found.append(HTTPField(name: name, value: $0)) }
            }
        }
        return found
    }

    /// The value of each line of `name` in the parser's list, in order: the one line the index found, or
    /// every line of that name along the list.
    private static func eachValue(of name: HTTPField.Name, in list: HTTPHeaders, _ lines: Lines, _ body: (String) -> Void) {
        let canonical = name.canonicalName
        switch lines.find(canonical) {
        case .absent:
            return
        case .line(let line):
            body(list[list.index(list.startIndex, offsetBy: line)].value)
        case .walk:
            // Names are matched as HTTP matches them, whatever their case: the parser keeps them as sent.
            for (lineName, value) in list where sameName(lineName, canonical) { body(value) }
        }
    }

    /// Whether `name` is `canonical` (lowercase) but for the case of its ASCII letters.
    static func sameName(_ name: String, _ canonical: String) -> Bool {
        // Lengths first: most names differ in theirs, and a native string knows its own. Then byte by byte in
        // place: every header of every request before the router is compared here.
        guard name.utf8.count == canonical.utf8.count else { return false }
        let inPlace = name.utf8.withContiguousStorageIfAvailable { name in
            canonical.utf8.withContiguousStorageIfAvailable { canonical in
                name.indices.allSatisfy { folded(name[$0]) == canonical[$0] }
            }
        }
        return (inPlace ?? nil) ?? name.utf8.elementsEqual(canonical.utf8) { folded($0) == $1 }
    }

    /// An ASCII letter in lowercase; any other byte as it is.
    private static func folded(_ byte: UInt8) -> UInt8 {
        byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
    }

    /// Which line of the parser's list holds each of the headers the doors read, and those of
    /// locations-service's answers the gateway relays (`slot(of:sentAs:)`), found in one walk as the headers
    /// arrive. A lookup of one of them is then a step to its line, not a comparison with every line's name:
    /// the hot read looks up three headers (five more while traces are on), a forwarded write thirteen and its
    /// answer five.
    /// A header sent on several lines (joined when looked up), one past the index's reach, and any other
    /// name are looked for along the list.
    struct Lines: Sendable {
        private static let absent: UInt8 = 0xFF
        private static let several: UInt8 = 0xFE
        /// Each name's line (by its place in `slot(of:sentAs:)`), `absent`, or `several`.
        private var lines = SIMD32<UInt8>(repeating: absent)

        enum Found: Equatable {
            case absent
            case line(Int)
            /// To be looked for along the list.
            case walk
        }

        init(_ list: HTTPHeaders) {
            var line = 0
            for (name, _) in list {
                if let slot = Self.slot(of: name, sentAs: true) {
                    lines[slot] = lines[slot] == Self.absent && line < Int(Self.several) ? UInt8(line) : Self.several
                }
                line += 1
            }
        }

        /// Where the header named `canonical` (lowercase) is.
        func find(_ canonical: String) -> Found {
            guard let slot = Self.slot(of: canonical, sentAs: false) else { return .walk }
            switch lines[slot] {
            case Self.absent: return .absent
            case Self.several: return .walk
            case let line: return .line(Int(line))
            }
        }

        /// The names indexed, by length, and the place of `name` among them: as a client sent it (`sentAs`,
        /// any case), or already lowercase. A name is compared with its usual spellings first, lowercase
        /// (HTTP/2's, and many clients') and capitalized (most HTTP/1 clients'), then letter by letter: the
        /// parser's names are compared here for every request the door before the router sees.
        private static func slot(of name: String, sentAs: Bool) -> Int? {
            func named(_ lowercase: String, _ usually: String) -> Bool {
                name == lowercase || (sentAs && (name == usually || sameName(name, lowercase)))
            }
            // Each length's names, each with its slot: the slots are the places in `lines`.
            switch name.utf8.count {
            case 4:
                if named("host", "Host") { return 0 }
                if named("etag", "ETag") { return 15 }
            case 6:
                if named("cookie", "Cookie") { return 1 }
                if named("origin", "Origin") { return 2 }
            case 7:
                if named("x-actor", "X-Actor") { return 3 }
            case 8:
                if named("if-match", "If-Match") { return 4 }
            case 10:
                if named("user-agent", "User-Agent") { return 5 }
                if named("tracestate", "Tracestate") { return 20 }
            case 11:
                if named("retry-after", "Retry-After") { return 16 }
                if named("traceparent", "Traceparent") { return 19 }
            case 12:
                if named("content-type", "Content-Type") { return 6 }
                if named("x-request-id", "X-Request-ID") { return 7 }
            case 13:
                if named("authorization", "Authorization") { return 8 }
                if named("if-none-match", "If-None-Match") { return 9 }
                if named("last-event-id", "Last-Event-ID") { return 10 }
                if named("cache-control", "Cache-Control") { return 17 }
            case 14:
                if named("sec-fetch-site", "Sec-Fetch-Site") { return 11 }
            case 15:
                if named("accept-encoding", "Accept-Encoding") { return 12 }
                if named("idempotency-key", "Idempotency-Key") { return 13 }
                if named("x-forwarded-for", "X-Forwarded-For") { return 14 }
            case 19:
                if named("idempotent-replayed", "Idempotent-Replayed") { return 18 }
            default: break
            }
            return nil
        }
    }
}
