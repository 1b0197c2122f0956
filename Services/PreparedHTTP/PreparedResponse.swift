import HTTPTypes
import Hummingbird
import NIOCore
import NIOHTTP1

/// A response decided without the router: status, headers, body, and the head already rendered to bytes
/// (status line, headers, `Content-Length`), since the same answer is sent many times.
public struct PreparedResponse: Sendable, Equatable {
    public let status: HTTPResponse.Status
    public private(set) var headers: HTTPFields
    public let body: ByteBuffer?
    /// What `PreparedResponseHandler` writes before the headers every answer carries (`AnswerHeaders`).
    public private(set) var head: ByteBuffer

    public init(status: HTTPResponse.Status, headers: HTTPFields, body: ByteBuffer?) {
        self.init(status: status, headers: headers, body: body, chunked: false)
    }

    /// The head of a stream's answer (`PreparedStream`), whose body follows in chunks.
    static func streamHead(headers: HTTPFields) -> PreparedResponse {
        PreparedResponse(status: .ok, headers: headers, body: nil, chunked: true)
    }

    private init(status: HTTPResponse.Status, headers: HTTPFields, body: ByteBuffer?, chunked: Bool) {
        self.status = status
        self.headers = headers
        self.body = body
        var head = ByteBuffer()
        // The reason phrase as the router's answers spell it (NIO's), which a status relayed from another
        // service by its bare code would otherwise lack.
        head.writeString("HTTP/1.1 \(status.code) \(HTTPResponseStatus(statusCode: status.code).reasonPhrase)\r\n")
        for field in headers { Self.write(field, to: &head) }
        if chunked {
            head.writeStaticString("Transfer-Encoding: chunked\r\n")
        } else {
            head.writeString("Content-Length: \(body?.readableBytes ?? 0)\r\n")
        }
        self.head = head
    }

    /// One more header, for this answer only (a request id, say).
    public mutating func append(_ field: HTTPField) {
        headers.append(field)
        Self.write(field, to: &head)
    }

    private static func write(_ field: HTTPField, to head: inout ByteBuffer) {
        head.writeString(field.name.rawName)
        head.writeStaticString(": ")
        head.writeString(field.value)
        head.writeStaticString("\r\n")
    }

    /// The same answer for a router handler.
    public var response: Response {
        Response(status: status, headers: headers, body: body.map { .init(byteBuffer: $0) } ?? .init())
    }
}
