/// How an answer's body is coded on the wire (`Content-Encoding`): as is, gzip, or brotli. These are the
/// codings the services send; `deflate` is not offered, since clients disagree on what it means (zlib's
/// wrapper or raw DEFLATE), and every client that asks for it asks for gzip too.
public enum ContentCoding: String, Sendable, CaseIterable {
    case identity
    case gzip
    case br

    /// The coding to answer with, from the request's `Accept-Encoding` (RFC 9110, 12.5.3): the acceptable
    /// one with the highest weight, brotli before gzip before none among equals. No header, or one that
    /// refuses both codings, is answered as is: a server may send identity even when `identity;q=0` (the
    /// alternative being a 406 nobody could act on).
    public static func negotiate(_ acceptEncoding: Substring?) -> ContentCoding {
        guard let acceptEncoding, !acceptEncoding.isEmpty else { return .identity }
        // Read in place as bytes, making no string, array or Character: every compressed hot read's header
        // passes here.
        var weights = Weights()
        if acceptEncoding.utf8.withContiguousStorageIfAvailable({ weights.read($0) }) == nil {
            Array(acceptEncoding.utf8).withUnsafeBufferPointer { weights.read($0) }
        }
        return weights.choice
    }

    public static func negotiate(_ acceptEncoding: String?) -> ContentCoding {
        negotiate(acceptEncoding.map { Substring($0) })
    }

    /// The weight the client gave each coding this server knows, and `*` (nil: not named).
    private struct Weights {
        typealias Bytes = Slice<UnsafeBufferPointer<UInt8>>
        var gzip: Double?
        var br: Double?
        var identity: Double?
        var any: Double?

        /// Notes each item of the comma-separated list.
        mutating func read(_ header: UnsafeBufferPointer<UInt8>) {
            var rest = header[...]
            while true {
                let end = rest.firstIndex(of: UInt8(ascii: ",")) ?? rest.endIndex
                note(rest[..<end])
                guard end < rest.endIndex else { return }
                rest = rest[rest.index(after: end)...]
            }
        }

        /// One item of the list: its coding and its weight (1 when it has none), the highest kept when a
        /// coding is named twice. An item without a name, or whose weight is not a number from 0 to 1, is
        /// left out, as if it were not there.
        private mutating func note(_ item: Bytes) {
            let nameEnd = item.firstIndex(of: UInt8(ascii: ";")) ?? item.endIndex
            let name = Self.trimmed(item[..<nameEnd])
            guard !name.isEmpty else { return }
            var weight = 1.0
            var parameters = item[nameEnd...]
            while let separator = parameters.first, separator == UInt8(ascii: ";") {
                parameters = parameters.dropFirst()
                let end = parameters.firstIndex(of: UInt8(ascii: ";")) ?? parameters.endIndex
                let parameter = Self.trimmed(parameters[..<end])
                parameters = parameters[end...]
                guard parameter.count > 2, Self.folded(parameter.first!) == UInt8(ascii: "q"),
                    parameter[parameter.index(after: parameter.startIndex)] == UInt8(ascii: "=")
                else { continue }
                guard let value = Self.weight(parameter.dropFirst(2)) else { return }
                weight = value
            }
            if Self.name(name, is: "gzip") || Self.name(name, is: "x-gzip") {
                gzip = max(gzip ?? 0, weight)
            } else if Self.name(name, is: "br") {
                br = max(br ?? 0, weight)
            } else if Self.name(name, is: "identity") {
                identity = max(identity ?? 0, weight)
            } else if Self.name(name, is: "*") {
                any = max(any ?? 0, weight)
            }
        }

        /// A coding the client did not name is acceptable only through `*`. The highest weight wins, and among
        /// equals the smaller: brotli, then gzip. As is wins only when weighted above both (it is acceptable
        /// anyway, unless refused, but as the last choice of a client that names a coding).
        var choice: ContentCoding {
            var best = ContentCoding.br
            var bestWeight = br ?? any ?? 0
            if let weight = gzip ?? any, weight > bestWeight {
                best = .gzip
                bestWeight = weight
            }
            if bestWeight == 0 || (identity ?? any ?? 0) > bestWeight { best = .identity }
            return best
        }

        /// A weight: digits, a point and more digits (`1`, `0.8`, `0.000`), from 0 to 1; nil for anything else.
        private static func weight(_ text: Bytes) -> Double? {
            var whole = 0
            var fraction = 0
            var scale = 1
            var digits = 0
            var pastPoint = false
            for byte in text {
                if byte == UInt8(ascii: "."), !pastPoint {
                    pastPoint = true
                    continue
                }
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
                digits += 1
                let digit = Int(byte - UInt8(ascii: "0"))
                if !pastPoint {
                    whole = min(whole * 10 + digit, 2)
                } else if scale < 1_000_000_000 {
                    // Digits past the ninth change nothing a weight can say (RFC 9110 allows three).
                    fraction = fraction * 10 + digit
                    scale *= 10
                }
            }
            guard digits > 0, whole <= 1, whole == 0 || fraction == 0 else { return nil }
            return Double(whole) + Double(fraction) / Double(scale)
        }

        private static func trimmed(_ bytes: Bytes) -> Bytes {
            var bytes = bytes
            while let first = bytes.first, first == UInt8(ascii: " ") || first == UInt8(ascii: "\t") { bytes = bytes.dropFirst() }
            while let last = bytes.last, last == UInt8(ascii: " ") || last == UInt8(ascii: "\t") { bytes = bytes.dropLast() }
            return bytes
        }

        private static func folded(_ byte: UInt8) -> UInt8 {
            byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
        }

        /// ASCII letters compared without case; `lowercase` is spelled in lowercase.
        private static func name(_ bytes: Bytes, is lowercase: StaticString) -> Bool {
            guard bytes.count == lowercase.utf8CodeUnitCount else { return false }
            var index = 0
            for byte in bytes {
                guard folded(byte) == lowercase.utf8Start[index] else { return false }
                index += 1
            }
            return true
        }
    }

    /// The `Content-Encoding` value of a coded form; nil as is.
    public var headerValue: String? { self == .identity ? nil : rawValue }
}
