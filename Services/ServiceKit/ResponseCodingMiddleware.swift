import ContentCoding
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// Codes the router's answers to a `GET` or `HEAD` on the fly, in the coding the client prefers of those it
/// accepts (`Accept-Encoding`): a 200 of text (JSON, GeoJSON, YAML, HTML, CSS, JavaScript, SVG) of a known
/// length of at least `CodedForms.smallest` bytes, with its entity tag marked with the coding (`EntityTags`);
/// a 304's tag is marked the same way. Each says `Vary: Accept-Encoding`, as does such an answer sent as is. An answer that says it varies by
/// `Accept-Encoding` already, or is coded already, made its own choice (a cached list's forms, the web
/// client's files), as has a stream, whose length is not known.
public struct ResponseCodingMiddleware<Context: RequestContext>: RouterMiddleware {
    public init() {}

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let response = try await next(request, context)
        guard request.method == .get || request.method == .head else { return response }
        return try await Self.coded(response, coding: request.acceptedCoding)
    }

    static func coded(_ response: Response, coding: ContentCoding) async throws -> Response {
        guard response.headers[.contentEncoding] == nil,
            !response.headers[values: .vary].contains(where: { $0.lowercased().contains("accept-encoding") })
        else { return response }
        var response = response
        switch response.status {
        case .notModified:
            guard let tag = response.headers[.eTag] else { return response }
            response.headers[.eTag] = EntityTags.coded(tag, coding)
            response.headers[.vary] = "Accept-Encoding"
            return response
        case .ok:
            guard let length = response.body.contentLength, length >= CodedForms.smallest,
                Self.isText(response.headers[.contentType])
            else { return response }
            response.headers[.vary] = "Accept-Encoding"
            guard coding != .identity else { return response }
            let collected = CollectedBody()
            try await response.body.write(collected)
            let plain = collected.buffer
            let coded = plain.withUnsafeReadableBytes { bytes in
                coding == .gzip ? Gzip.compress(bytes) : Brotli.compress(bytes)
            }
            guard coded.count < plain.readableBytes else {
                response.body = .init(byteBuffer: plain)
                return response
            }
            response.headers[.contentEncoding] = coding.rawValue
            if let tag = response.headers[.eTag] { response.headers[.eTag] = EntityTags.coded(tag, coding) }
            response.body = .init(byteBuffer: ByteBuffer(bytes: coded))
            return response
        default:
            return response
        }
    }

    /// Types whose bytes compress: text and the JSON and YAML the API speaks.
    static func isText(_ contentType: String?) -> Bool {
        guard let type = contentType?.lowercased().split(separator: ";").first?.trimmingCharacters(in: .whitespaces) else { return false }
        return type.hasPrefix("text/") || type.hasSuffix("json") || type.hasSuffix("yaml") || type.hasSuffix("+xml")
            || type == "application/javascript"
    }
}

/// A response body's bytes, gathered.
private final class CollectedBody: ResponseBodyWriter {
    var buffer = ByteBuffer()

    func write(_ buffer: ByteBuffer) async throws {
        var buffer = buffer
        self.buffer.writeBuffer(&buffer)
    }

    func write(contentsOf buffers: some Sequence<ByteBuffer>) async throws {
        for buffer in buffers { try await write(buffer) }
    }

    func finish(_ trailingHeaders: HTTPFields?) async throws {}
}

extension Request {
    /// The coding this request's `Accept-Encoding` lines prefer (`ContentCoding.negotiate`).
    public var acceptedCoding: ContentCoding {
        ContentCoding.negotiate(headers[values: .acceptEncoding].joined(separator: ","))
    }
}
