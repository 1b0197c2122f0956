import ContentCoding
import Crypto
import Foundation
import NIOCore
import ServiceKit

/// One file of the web client as served: its bytes, type and validator, and its gzip and brotli forms, each
/// made at the best level the first time a browser asks for it and kept from then on.
final class WebAsset: Sendable {
    let body: ByteBuffer
    let contentType: String
    let cacheControl: String
    /// A strong validator of the content; a coded form's has its coding inside the quotes (`EntityTags`).
    let etag: String
    private let forms: CodedForms

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
        forms = CodedForms(body, gzipLevel: 9, brotliQuality: Brotli.bestQuality)
    }

    /// Text compresses; PNG images are compressed already.
    var isCompressible: Bool { !contentType.hasPrefix("image/png") }

    /// The body in `coding` (or as is, when that form is no smaller), and the coding it is in.
    func body(_ coding: ContentCoding) -> (body: ByteBuffer, coding: ContentCoding) {
        isCompressible ? forms.body(coding) : (body, .identity)
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
