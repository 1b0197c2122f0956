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
        // Read byte by byte, without making strings: every hot read's header passes here.
        var gzipWeight: Double?
        var brWeight: Double?
        var identityWeight: Double?
        var anyWeight: Double?
        for item in acceptEncoding.utf8.split(separator: UInt8(ascii: ",")) {
            guard let (name, weight) = parse(Substring(item)) else { continue }
            if name.equalsIgnoringCase("gzip") || name.equalsIgnoringCase("x-gzip") {
                gzipWeight = max(gzipWeight ?? 0, weight)
            } else if name.equalsIgnoringCase("br") {
                brWeight = max(brWeight ?? 0, weight)
            } else if name.equalsIgnoringCase("identity") {
                identityWeight = max(identityWeight ?? 0, weight)
            } else if name == "*" {
                anyWeight = max(anyWeight ?? 0, weight)
            }
        }
        // A coding the client did not name is acceptable only through `*`. The highest weight wins, and among
        // equals the smaller: brotli, then gzip. As is wins only when weighted above both (it is acceptable
        // anyway, unless refused, but as the last choice of a client that names a coding).
        var best = ContentCoding.br
        var bestWeight = brWeight ?? anyWeight ?? 0
        if let weight = gzipWeight ?? anyWeight, weight > bestWeight {
            best = .gzip
            bestWeight = weight
        }
        if bestWeight == 0 || (identityWeight ?? anyWeight ?? 0) > bestWeight { best = .identity }
        return best
    }

    public static func negotiate(_ acceptEncoding: String?) -> ContentCoding {
        negotiate(acceptEncoding.map { Substring($0) })
    }

    /// One item of the list: its coding and its weight (1 when it has none). An item whose weight is not a
    /// number from 0 to 1 is left out, as if it were not there.
    private static func parse(_ item: Substring) -> (Substring, Double)? {
        var parts = item.split(separator: ";", omittingEmptySubsequences: false)[...]
        guard let first = parts.popFirst() else { return nil }
        let name = first.trimmingWhitespace()
        guard !name.isEmpty else { return nil }
        var weight = 1.0
        for parameter in parts {
            let parameter = parameter.trimmingWhitespace()
            guard parameter.utf8.count > 2, parameter.prefix(2).equalsIgnoringCase("q=") else { continue }
            guard let value = Double(parameter.dropFirst(2)), (0...1).contains(value) else { return nil }
            weight = value
        }
        return (name, weight)
    }

    /// The `Content-Encoding` value of a coded form; nil as is.
    public var headerValue: String? { self == .identity ? nil : rawValue }
}

extension Substring {
    /// ASCII letters compared without case; `lowercase` is spelled in lowercase.
    fileprivate func equalsIgnoringCase(_ lowercase: StaticString) -> Bool {
        guard utf8.count == lowercase.utf8CodeUnitCount else { return false }
        var index = 0
        for byte in utf8 {
            let folded = (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte + 32 : byte
            guard folded == lowercase.utf8Start[index] else { return false }
            index += 1
        }
        return true
    }

    fileprivate func trimmingWhitespace() -> Substring {
        var text = self
        while let first = text.first, first == " " || first == "\t" { text = text.dropFirst() }
        while let last = text.last, last == " " || last == "\t" { text = text.dropLast() }
        return text
    }
}
