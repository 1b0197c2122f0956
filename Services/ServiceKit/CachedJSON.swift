import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NIOHTTP1
import PreparedHTTP

/// A JSON document kept in memory with its strong entity tag, answered without being encoded again.
public struct CachedJSON: Sendable {
    public let body: ByteBuffer
    public let etag: String
    /// Both answers, made once: the hot read is answered many times for each list it caches.
    private let full: PreparedResponse
    private let notModified: PreparedResponse

    public init(body: ByteBuffer, etag: String, contentType: String = "application/json") {
        self.body = body
        self.etag = etag
        full = PreparedResponse(status: .ok, headers: [.contentType: contentType, .eTag: etag], body: body)
        notModified = PreparedResponse(status: .notModified, headers: [.eTag: etag], body: nil)
    }

    /// The answer to a GET of this document: 304 when the client's copy is current, else 200 and the bytes.
    public func answer(ifNoneMatch: String?) -> PreparedResponse {
        if let ifNoneMatch, Self.matches(ifNoneMatch, etag) { return notModified }
        return full
    }

    /// `If-None-Match` is a comma-separated list of tags, or `*` for any.
    static func matches(_ ifNoneMatch: String, _ etag: String) -> Bool {
        ifNoneMatch.split(separator: ",").contains { candidate in
            let tag = candidate.trimmingCharacters(in: .whitespaces)
            return tag == etag || tag == "*"
        }
    }
}
