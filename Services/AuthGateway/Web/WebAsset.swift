import Crypto
import Foundation
import NIOCore
import ServiceKit
import Synchronization

/// One file of the web client as served: its bytes, type and validator, and its gzip form, made the first
/// time a browser that accepts gzip asks for it and kept from then on.
final class WebAsset: Sendable {
    let body: ByteBuffer
    let contentType: String
    let cacheControl: String
    /// A strong validator of the content; the gzip form's is this one with `-gzip` inside the quotes.
    let etag: String
    private let gzipped = Mutex<ByteBuffer?>(nil)

    /// Browsers ask again each time and get 304 while nothing changed: the page stays small and current.
    static let revalidated = "no-cache"
    /// The world map's files change only with a release, and are the page's largest: a browser keeps them a
    /// week before it asks again (and then gets 304 while they are the same).
    static let keptAWeek = "public, max-age=604800"

    init(bytes: [UInt8], contentType: String, cacheControl: String = revalidated) {
        body = ByteBuffer(bytes: bytes)
        self.contentType = contentType
        self.cacheControl = cacheControl
        etag = "\"\(SHA256.hash(data: bytes).prefix(12).hexString)\""
    }

    var gzipETag: String { String(etag.dropLast()) + "-gzip\"" }

    /// Text compresses; PNG images are compressed already.
    var isCompressible: Bool { !contentType.hasPrefix("image/png") }

    var gzipBody: ByteBuffer {
        if let done = gzipped.withLock({ $0 }) { return done }
        let compressed = ByteBuffer(bytes: Gzip.compress(Array(body.readableBytesView)))
        gzipped.withLock { $0 = compressed }
        return compressed
    }

    /// Whether `If-None-Match` names either form of this content (or is `*`).
    func matches(ifNoneMatch: String?) -> Bool {
        guard let ifNoneMatch else { return false }
        return ifNoneMatch.split(separator: ",").contains { tag in
            let tag = tag.trimmingCharacters(in: .whitespaces)
            let strong = tag.hasPrefix("W/") ? String(tag.dropFirst(2)) : tag
            return strong == "*" || strong == etag || strong == gzipETag
        }
    }

    static func contentType(forExtension pathExtension: String) -> String? {
        switch pathExtension.lowercased() {
        case "html": "text/html; charset=utf-8"
        case "css": "text/css; charset=utf-8"
        case "js", "mjs": "text/javascript; charset=utf-8"
        case "json": "application/json"
        case "svg": "image/svg+xml"
        case "png": "image/png"
        case "ico": "image/x-icon"
        case "txt": "text/plain; charset=utf-8"
        default: nil
        }
    }
}
