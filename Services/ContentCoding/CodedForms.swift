import NIOCore
import Synchronization

/// One representation's bytes as is, and its gzip and brotli forms, each made the first time a client
/// asks for it and kept from then on: a version of the latest list, a file of the web client. A form that
/// would not be smaller than the plain bytes is not made, and the plain bytes answer in its place.
public final class CodedForms: Sendable {
    public let plain: ByteBuffer
    private let gzipLevel: Int32
    private let brotliQuality: Int32
    private let made = Mutex<(gzip: Form, br: Form)>((.unmade, .unmade))

    private enum Form {
        case unmade
        case made(ByteBuffer)
        /// Made, and no smaller than the plain bytes.
        case noSmaller
    }

    /// Bodies shorter than this are sent as they are: their coded forms save less than a packet's headers.
    public static let smallest = 256

    public init(_ plain: ByteBuffer, gzipLevel: Int32 = Gzip.defaultLevel, brotliQuality: Int32 = Brotli.defaultQuality) {
        self.plain = plain
        self.gzipLevel = gzipLevel
        self.brotliQuality = brotliQuality
    }

    /// The body in `coding`, and the coding it is really in (identity when the coded form is no smaller).
    public func body(_ coding: ContentCoding) -> (body: ByteBuffer, coding: ContentCoding) {
        guard coding != .identity, plain.readableBytes >= Self.smallest else { return (plain, .identity) }
        var form = made.withLock { coding == .gzip ? $0.gzip : $0.br }
        if case .unmade = form {
            // Made outside the lock: two first askers may both make it, and neither waits on the other.
            let coded = plain.withUnsafeReadableBytes { bytes in
                coding == .gzip ? Gzip.compress(bytes, level: gzipLevel) : Brotli.compress(bytes, quality: brotliQuality)
            }
            form = coded.count < plain.readableBytes ? .made(ByteBuffer(bytes: coded)) : .noSmaller
            made.withLock { [form] in if coding == .gzip { $0.gzip = form } else { $0.br = form } }
        }
        guard case .made(let body) = form else { return (plain, .identity) }
        return (body, coding)
    }
}
/// Entity tags of coded forms: the plain form's tag with the coding inside its quotes (`"abc"`,
/// `"abc-gzip"`, `"abc-br"`), so each form has a tag of its own and a cache never takes one for another.
public enum EntityTags {
    public static func coded(_ tag: String, _ coding: ContentCoding) -> String {
        guard coding != .identity, tag.hasSuffix("\"") else { return tag }
        return String(tag.dropLast()) + "-" + coding.rawValue + "\""
    }

    /// Whether `If-None-Match` names any form of the representation whose plain tag is `tag`, or is `*`.
    /// Compared weakly, as RFC 9110 has it for this header: `W/"abc-gzip"` names `"abc"`. Any form will do:
    /// a client holding one form holds the same content, and the 304 carries the tag of the form it asked for.
    public static func ifNoneMatch(_ header: String, namesAnyFormOf tag: String) -> Bool {
        let plain = opaque(Substring(tag))
        return header.split(separator: ",").contains { candidate in
            var candidate = opaque(candidate.drop { $0 == " " || $0 == "\t" })
            while candidate.last == " " || candidate.last == "\t" { candidate = candidate.dropLast() }
            if candidate == "*" || candidate == plain { return true }
            for coding in [ContentCoding.gzip, .br] where candidate.hasSuffix("-\(coding.rawValue)\"") {
                if candidate.dropLast(coding.rawValue.utf8.count + 2) == plain.dropLast() { return true }
            }
            return false
        }
    }

    /// The tag without its weakness mark.
    private static func opaque(_ tag: Substring) -> Substring {
        tag.hasPrefix("W/") ? tag.dropFirst(2) : tag
    }
}
