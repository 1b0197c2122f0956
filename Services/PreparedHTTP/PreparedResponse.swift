import HTTPTypes
import Hummingbird
import NIOCore
import NIOHTTP1

/// A response decided without the router: status, headers, body, and the head already rendered to bytes
/// (status line, headers, `Content-Length`), since the same answer is sent many times.
///
/// Its parts are kept in one shared object: an answer from memory is copied several times on its way out
/// (from the cache to the connection's state, to the write) on every event loop at once, and each copy costs
/// one reference count, not one for each part. A header appended for one answer (a request id) is kept
/// beside them, not in a copy of their headers and head made for every request.
public struct PreparedResponse: Sendable, Equatable {
    private var parts: Parts
    /// The header appended to this answer alone, written after `parts`' head.
    private var appended: HTTPField?

    private final class Parts: Sendable {
        let status: HTTPResponse.Status
        let headers: HTTPFields
        let body: ByteBuffer?
        let head: ByteBuffer

        init(status: HTTPResponse.Status, headers: HTTPFields, body: ByteBuffer?, head: ByteBuffer) {
            self.status = status
            self.headers = headers
            self.body = body
            self.head = head
        }
    }

    public var status: HTTPResponse.Status { parts.status }
    public var body: ByteBuffer? { parts.body }

    public var headers: HTTPFields {
        guard let appended else { return parts.headers }
        var headers = parts.headers
        headers.append(appended)
        return headers
    }

    /// What `PreparedResponseHandler` writes before the headers every answer carries (`AnswerHeaders`).
    public var head: ByteBuffer {
        var head = ByteBuffer()
        writeHead(to: &head)
        return head
    }

    /// Writes `head` to `buffer`.
    func writeHead(to buffer: inout ByteBuffer) {
        buffer.writeImmutableBuffer(parts.head)
        if let appended { buffer.writeField(appended) }
    }

    /// What every request answered with this very answer shares, and nothing else: the parts, unless a
    /// header was appended for this request alone (nil then). A whole rendered answer is kept by it.
    var shared: AnyObject? { appended == nil ? parts : nil }

    /// The length of `head`.
    var headLength: Int {
        parts.head.readableBytes + (appended.map { $0.name.rawName.utf8.count + $0.value.utf8.count + 4 } ?? 0)
    }

    public init(status: HTTPResponse.Status, headers: HTTPFields, body: ByteBuffer?) {
        self.init(status: status, headers: headers, body: body, chunked: false)
    }

    /// The head of a stream's answer (`PreparedStream`), whose body follows in chunks.
    static func streamHead(headers: HTTPFields) -> PreparedResponse {
        PreparedResponse(status: .ok, headers: headers, body: nil, chunked: true)
    }

    private init(status: HTTPResponse.Status, headers: HTTPFields, body: ByteBuffer?, chunked: Bool) {
        // Room for all of it at once (status line and length take at most 96 bytes): grown as it is written,
        // the buffer would be made again several times.
        var head = ByteBuffer()
        head.reserveCapacity(96 + headers.wireLength)
        // The reason phrase as the router's answers spell it (NIO's), which a status relayed from another
        // service by its bare code would otherwise lack.
        // Written piece by piece: an interpolated string would be made and copied for each answer first.
        head.writeStaticString("HTTP/1.1 ")
        head.writeString(String(status.code))
        head.writeStaticString(" ")
        head.writeString(HTTPResponseStatus(statusCode: status.code).reasonPhrase)
        head.writeStaticString("\r\n")
        for field in headers { head.writeField(field) }
        if chunked {
            head.writeStaticString("Transfer-Encoding: chunked\r\n")
        } else {
            head.writeStaticString("Content-Length: ")
            head.writeString(String(body?.readableBytes ?? 0))
            head.writeStaticString("\r\n")
        }
        parts = Parts(status: status, headers: headers, body: body, head: head)
    }

    /// One more header, for this answer only (a request id, say).
    public mutating func append(_ field: HTTPField) {
        if let earlier = appended {
            var (headers, head) = (parts.headers, parts.head)
            headers.append(earlier)
            head.writeField(earlier)
            parts = Parts(status: parts.status, headers: headers, body: parts.body, head: head)
        }
        appended = field
    }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        (lhs.parts === rhs.parts && lhs.appended == rhs.appended)
            || (lhs.status == rhs.status && lhs.headers == rhs.headers && lhs.body == rhs.body && lhs.head == rhs.head)
    }

    /// The same answer for a router handler.
    public var response: Response {
        Response(status: status, headers: headers, body: body.map { .init(byteBuffer: $0) } ?? .init())
    }
}

extension ByteBuffer {
    /// One header line of an HTTP/1 head, `name: value` and its line end: an answer's, and the gateway's
    /// requests to its hop.
    public mutating func writeField(_ field: HTTPField) {
        writeString(field.name.rawName)
        writeStaticString(": ")
        writeString(field.value)
        writeStaticString("\r\n")
    }
}

extension HTTPFields {
    /// The bytes `ByteBuffer.writeField` writes for all of them: what a head is allocated for.
    public var wireLength: Int { reduce(0) { $0 + $1.name.rawName.utf8.count + $1.value.utf8.count + 4 } }
}
