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
    /// The header appended to this answer alone, written last in its head.
    private(set) var appended: Appended?

    private final class Parts: Sendable {
        let status: HTTPResponse.Status
        let headers: HTTPFields
        let body: ByteBuffer?
        let head: ByteBuffer
        /// Sent again and again (a cache's answer): worth keeping rendered (`AnswerHeaders.whole`).
        let reused: Bool

        init(status: HTTPResponse.Status, headers: HTTPFields, body: ByteBuffer?, head: ByteBuffer, reused: Bool) {
            self.status = status
            self.headers = headers
            self.body = body
            self.head = head
            self.reused = reused
        }
    }

    /// One header appended for one answer: its value is known to be a legal field value.
    struct Appended: Sendable, Equatable {
        let name: HTTPField.Name
        let value: String

        /// Its line's length in a head: `name: value` and the line's end.
        var wireLength: Int { fieldLineLength(name, value) }
    }

    public var status: HTTPResponse.Status { parts.status }
    public var body: ByteBuffer? { parts.body }

    public var headers: HTTPFields {
        guard let appended else { return parts.headers }
        var headers = parts.headers
        headers.append(HTTPField(name: appended.name, value: appended.value))
        return headers
    }

    /// The status line and headers of `parts`, `Content-Length` last: what `PreparedResponseHandler`
    /// writes first, the headers every answer carries (`AnswerHeaders`) and `appended` after it.
    var sharedHead: ByteBuffer { parts.head }

    /// What every request answered with this very answer shares, when it is one sent again and again (a
    /// cache's): its parts, by which a whole rendered answer is kept. nil for one made for its request.
    var shared: AnyObject? { parts.reused ? parts : nil }

    /// `reused`: the answer is kept and sent again and again (a cache's), so each thread that sends it keeps
    /// it rendered; an answer made for one request (an error, a write's answer) is rendered for it alone.
    public init(status: HTTPResponse.Status, headers: HTTPFields, body: ByteBuffer?, reused: Bool = false) {
        self.init(status: status, headers: headers, body: body, chunked: false, reused: reused)
    }

    /// The head of a stream's answer (`PreparedStream`), whose body follows in chunks.
    static func streamHead(headers: HTTPFields) -> PreparedResponse {
        PreparedResponse(status: .ok, headers: headers, body: nil, chunked: true, reused: false)
    }

    private init(status: HTTPResponse.Status, headers: HTTPFields, body: ByteBuffer?, chunked: Bool, reused: Bool) {
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
        parts = Parts(status: status, headers: headers, body: body, head: head, reused: reused)
    }

    /// One more header, for this answer only (a request id, say).
    public mutating func append(_ field: HTTPField) {
        append(field.name, legalValue: field.value)
    }

    /// The same for a value the caller has checked is a legal field value (visible ASCII, say: a request id
    /// it made or vetted), which is not checked again: the hot read appends one to every answer.
    public mutating func append(_ name: HTTPField.Name, legalValue value: String) {
        assert(HTTPField(name: name, value: value).value == value, "not a legal field value: \(value)")
        if let earlier = appended {
            var (headers, head) = (parts.headers, parts.head)
            headers.append(HTTPField(name: earlier.name, value: earlier.value))
            head.writeField(earlier.name, earlier.value)
            // Parts of this answer's own, kept by nobody else.
            parts = Parts(status: parts.status, headers: headers, body: parts.body, head: head, reused: false)
        }
        appended = Appended(name: name, value: value)
    }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        (lhs.parts === rhs.parts && lhs.appended == rhs.appended)
            || (lhs.status == rhs.status && lhs.headers == rhs.headers && lhs.body == rhs.body && lhs.parts.head == rhs.parts.head
                && lhs.appended == rhs.appended)
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
        writeField(field.name, field.value)
    }

    mutating func writeField(_ name: HTTPField.Name, _ value: String) {
        writeString(name.rawName)
        writeStaticString(": ")
        writeString(value)
        writeStaticString("\r\n")
    }
}

extension HTTPFields {
    /// The bytes `ByteBuffer.writeField` writes for all of them: what a head is allocated for.
    public var wireLength: Int { reduce(0) { $0 + fieldLineLength($1.name, $1.value) } }
}

/// The bytes `ByteBuffer.writeField` writes for one header.
private func fieldLineLength(_ name: HTTPField.Name, _ value: String) -> Int {
    name.rawName.utf8.count + value.utf8.count + 4
}
