import Foundation
import NIOCore
import NIOHTTP1
import Synchronization

/// The headers every answer carries, whichever door it leaves by, added in this one place for both: the
/// router's answers on their way out, and the handler's own as they are rendered.
public struct AnswerHeaders {
    /// A browser must never guess a type other than the one we name (a JSON answer that holds a
    /// student's text taken for HTML, say).
    public static let noSniff = (name: "X-Content-Type-Options", value: "nosniff")

    let serverName: String
    /// `\r\nServer: <name>\r\nX-Content-Type-Options: nosniff\r\n\r\n`: what ends a rendered head, after the date.
    private let trailer: [UInt8]

    init(serverName: String) {
        self.serverName = serverName
        trailer = Array("\r\nServer: \(serverName)\r\n\(Self.noSniff.name): \(Self.noSniff.value)\r\n\r\n".utf8)
    }

    /// A router's answer: the date of this second (in place of the router's own), the server, no sniffing.
    func stamp(_ head: inout HTTPResponseHead) {
        head.headers.replaceOrAdd(name: "Date", value: HTTPDate.now)
        head.headers.replaceOrAdd(name: "Server", value: serverName)
        head.headers.replaceOrAdd(name: Self.noSniff.name, value: Self.noSniff.value)
    }

    /// The head of one of the handler's answers, ready to send: its rendered head, then the same headers.
    func render(_ answer: PreparedResponse, allocator: ByteBufferAllocator) -> ByteBuffer {
        var head = allocator.buffer(capacity: answer.head.readableBytes + 48 + trailer.count)
        head.writeImmutableBuffer(answer.head)
        head.writeStaticString("Date: ")
        head.writeString(HTTPDate.now)
        head.writeBytes(trailer)
        return head
    }
}

/// The `Date` header's value (RFC 9110 IMF-fixdate), formatted once a second.
enum HTTPDate {
    private static let cache = Mutex<(second: Int, text: String)>((-1, ""))

    static var now: String {
        let second = time(nil)
        return cache.withLock { cache in
            if cache.second != second { cache = (second, format(second)) }
            return cache.text
        }
    }

    static func format(_ second: Int) -> String {
        var seconds = time_t(second)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(days[Int(parts.tm_wday)]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon)]) \(parts.tm_year + 1900) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
    }
}
