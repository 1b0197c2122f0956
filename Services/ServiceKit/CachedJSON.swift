import ContentCoding
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NIOHTTP1
import PreparedHTTP

/// A JSON document kept in memory with its strong entity tag, answered without being encoded again: as
/// is, gzipped or in brotli as the client accepts (`Accept-Encoding`), each coded form made once, the
/// first time a client asks for it, with a tag of its own (`EntityTags`) and `Vary: Accept-Encoding` on
/// every answer.
public struct CachedJSON: Sendable {
    public let body: ByteBuffer
    public let etag: String
    private let answers: Answers

    public init(body: ByteBuffer, etag: String, contentType: String = "application/json") {
        self.body = body
        self.etag = etag
        answers = Answers(body: body, etag: etag, contentType: contentType)
    }

    /// The answer to a GET of this document: 304 when the client holds any form of it, else 200 and the
    /// bytes, in the coding the client prefers of those it accepts.
    public func answer(ifNoneMatch: String?, coding: ContentCoding) -> PreparedResponse {
        let answer = answers.answer(coding)
        if let ifNoneMatch, EntityTags.ifNoneMatch(ifNoneMatch, namesAnyFormOf: etag) { return answer.notModified }
        return answer.full
    }

    /// The answer to a request read before the router.
    public func answer(_ request: PreparedRequest) -> PreparedResponse {
        answer(ifNoneMatch: request.header(.ifNoneMatch), coding: ContentCoding.negotiate(request.header(.acceptEncoding)))
    }

    /// The answer to a request the router read.
    public func answer(_ request: Request) -> Response {
        answer(ifNoneMatch: request.headers[.ifNoneMatch], coding: request.acceptedCoding).response
    }

    /// Both answers of each form, made once: the hot read is answered many times for each list it caches.
    /// A coded form's pair is taken without a lock (each event loop reads it for every request; a lock
    /// would be one more thing they wait on one another for): the first to make it stores it.
    private final class Answers: Sendable {
        let forms: CodedForms
        let etag: String
        let contentType: String
        let plain: Pair
        let gzip = PublishedOnce<Pair>()
        let br = PublishedOnce<Pair>()

        /// A form's full answer and its `304`.
        final class Pair: Sendable {
            let full: PreparedResponse
            let notModified: PreparedResponse

            init(full: PreparedResponse, notModified: PreparedResponse) {
                self.full = full
                self.notModified = notModified
            }
        }

        init(body: ByteBuffer, etag: String, contentType: String) {
            forms = CodedForms(body)
            self.etag = etag
            self.contentType = contentType
            plain = Self.answers(body: body, coding: .identity, etag: etag, contentType: contentType)
        }

        func answer(_ coding: ContentCoding) -> Pair {
            switch coding {
            case .identity: plain
            case .gzip: gzip.load() ?? gzip.storeIfNil(made(.gzip))
            case .br: br.load() ?? br.storeIfNil(made(.br))
            }
        }

        private func made(_ coding: ContentCoding) -> Pair {
            let (body, really) = forms.body(coding)
            return really == .identity ? plain : Self.answers(body: body, coding: really, etag: etag, contentType: contentType)
        }

        private static func answers(
            body: ByteBuffer, coding: ContentCoding, etag: String, contentType: String
        ) -> Pair {
            let tag = EntityTags.coded(etag, coding)
            var full: HTTPFields = [.contentType: contentType, .eTag: tag, .vary: "Accept-Encoding"]
            if let value = coding.headerValue { full[.contentEncoding] = value }
            return Pair(
                full: PreparedResponse(status: .ok, headers: full, body: body, reused: true),
                notModified: PreparedResponse(status: .notModified, headers: [.eTag: tag, .vary: "Accept-Encoding"], body: nil, reused: true))
        }
    }
}
