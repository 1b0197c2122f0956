import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP1
import NIOPosix

/// The headers every answer carries, whichever door it leaves by, added in this one place for both: the
/// router's answers on their way out, and the handler's own as they are rendered. An answer that reaches
/// its client over HTTPS also carries `Strict-Transport-Security`.
public struct AnswerHeaders: Sendable {
    /// A browser must never guess a type other than the one we name (a JSON answer that holds a
    /// student's text taken for HTML, say).
    public static let noSniff = (name: "X-Content-Type-Options", value: "nosniff")
    /// A browser that has read this over HTTPS goes to the site by HTTPS only, for a year, and will not let
    /// its user click through a certificate warning for it. Subdomains are left out: they may be other
    /// people's servers.
    public static let strictTransportSecurity = (name: "Strict-Transport-Security", value: "max-age=31536000")

    let serverName: String
    /// Whether every answer on the connection reaches its client over HTTPS (TLS to this server).
    let secure: Bool
    /// `\r\nServer: <name>\r\nX-Content-Type-Options: nosniff\r\n`: what follows the date in a rendered head.
    private let lines: [UInt8]
    /// The same with `Strict-Transport-Security`, for answers over HTTPS.
    private let secureLines: [UInt8]

    public init(serverName: String, secure: Bool = false) {
        self.serverName = serverName
        self.secure = secure
        let common = "\r\nServer: \(serverName)\r\n\(Self.noSniff.name): \(Self.noSniff.value)\r\n"
        lines = Array(common.utf8)
        secureLines = Array((common + "\(Self.strictTransportSecurity.name): \(Self.strictTransportSecurity.value)\r\n").utf8)
    }

    /// A router's answer: the date of this second (in place of the router's own), the server, no sniffing.
    func stamp(_ head: inout HTTPResponseHead) {
        head.headers.replaceOrAdd(name: "Date", value: HTTPDate.now)
        head.headers.replaceOrAdd(name: "Server", value: serverName)
        head.headers.replaceOrAdd(name: Self.noSniff.name, value: Self.noSniff.value)
        if secure { head.headers.replaceOrAdd(name: Self.strictTransportSecurity.name, value: Self.strictTransportSecurity.value) }
    }

    /// The same headers on an answer of the HTTP/2 channel, where every answer is the router's.
    func stamp(_ response: inout HTTPResponse) {
        response.headerFields[.date] = HTTPDate.now
        response.headerFields[.server] = serverName
        response.headerFields[Self.noSniffField] = Self.noSniff.value
        if secure { response.headerFields[Self.strictTransportSecurityField] = Self.strictTransportSecurity.value }
    }

    static let noSniffField = HTTPField.Name(noSniff.name)!
    static let strictTransportSecurityField = HTTPField.Name(strictTransportSecurity.name)!

    /// The head of one of the handler's answers, ready to send: its rendered head, the same headers, and
    /// the header appended for this answer alone, if any (`secure`: the answer reaches its client over
    /// HTTPS, on this connection or through a trusted proxy). `second`: the time its `Date` says, as
    /// `time(nil)` counts; `room`: bytes to leave room for after the head.
    func render(
        _ answer: PreparedResponse, secure: Bool = false, allocator: ByteBufferAllocator, second: Int = time(nil), room: Int = 0
    ) -> ByteBuffer {
        var head = allocator.buffer(capacity: length(answer, secure: secure) + room)
        write(answer, secure: secure, second: second, to: &head)
        return head
    }

    /// Room enough for `render`'s head.
    private func length(_ answer: PreparedResponse, secure: Bool) -> Int {
        answer.sharedHead.readableBytes + 48 + secureLines.count + (answer.appended?.wireLength ?? 0) + 2
    }

    /// `render`'s head, written to `head`: the answer's shared head, the date, the headers every answer
    /// carries, the appended header, and the blank line.
    private func write(_ answer: PreparedResponse, secure: Bool, second: Int, to head: inout ByteBuffer) {
        head.writeImmutableBuffer(answer.sharedHead)
        head.writeStaticString("Date: ")
        head.writeString(HTTPDate.of(second))
        head.writeBytes(secure || self.secure ? secureLines : lines)
        if let appended = answer.appended { head.writeField(appended.name, appended.value) }
        head.writeStaticString("\r\n")
    }

    /// One of the handler's answers whole, head and body in one buffer, as `render` and the body would be
    /// written; nil when it is better written in two (a body past `Rendered.largest`, or past `copied` in an
    /// answer made for one request).
    ///
    /// The same answer goes out many times a second (the hot read), and but for its date every copy is the
    /// same: it is rendered once a second by each thread that sends it and kept there (`Rendered`), so that
    /// each request costs one write of one buffer, with no head made or copied. A header appended for each
    /// request (the gateway's request id) comes last in the head, and the kept answer leaves room before
    /// its head for that header's value to be written in place, request by request (`Rendered.Slot`). An
    /// answer made for one request (a write's, an error) is rendered for it, its body copied in after its
    /// head when that is small, and not kept: it would take the place of one sent again.
    func whole(_ answer: PreparedResponse, secure: Bool = false, allocator: ByteBufferAllocator, second: Int = time(nil)) -> ByteBuffer? {
        let length = answer.body?.readableBytes ?? 0
        let appended = answer.appended
        guard let shared = answer.shared, length <= Rendered.largest, appended?.value.utf8.count ?? 0 <= Rendered.Slot.room else {
            return length <= Self.copied ? rendered(answer, secure: secure, allocator: allocator, second: second) : nil
        }
        let secure = secure || self.secure
        let kept = Rendered.ofThisThread
        if let whole = kept.find(shared, appended: appended, secure: secure, second: second) { return whole }
        guard let appended else {
            let whole = rendered(answer, secure: secure, allocator: allocator, second: second)
            kept.keep(whole, of: shared, secure: secure, second: second)
            return whole
        }
        // Room for the longest value before the head; the value is written last in it, followed by its line's
        // end and the head's, where it ends for every request.
        let filled = appended.value.utf8.count
        var whole = allocator.buffer(capacity: Rendered.Slot.room + self.length(answer, secure: secure) + length)
        whole.writeRepeatingByte(UInt8(ascii: " "), count: Rendered.Slot.room - filled)
        let start = whole.writerIndex
        write(answer, secure: secure, second: second, to: &whole)
        let end = whole.writerIndex - 4
        let slot = Rendered.Slot(name: appended.name, prefix: end - filled - start, end: end)
        if var body = answer.body { whole.writeBuffer(&body) }
        kept.keep(whole, of: shared, slot: slot, filled: filled, secure: secure, second: second)
        whole.moveReaderIndex(to: start)
        return whole
    }

    /// The largest body copied after a head rendered for one request: one write of one buffer then costs
    /// fewer instructions than a second write of the body (1,300 fewer a request for the gateway's
    /// compressed hot read, of 39,100); a larger body is not worth its copy.
    static let copied = 8 * 1024

    private func rendered(_ answer: PreparedResponse, secure: Bool, allocator: ByteBufferAllocator, second: Int) -> ByteBuffer {
        var whole = render(answer, secure: secure, allocator: allocator, second: second, room: answer.body?.readableBytes ?? 0)
        if var body = answer.body { whole.writeBuffer(&body) }
        return whole
    }

    /// The whole answers one thread sent lately, a few (`capacity`): what answers most requests is among
    /// them. An answer is kept by its shared parts, which the entry holds, so the object cannot be
    /// another's while it is here. Nothing else ever touches a thread's.
    final class Rendered: @unchecked Sendable {
        /// The largest body kept whole. Each answer kept holds a copy of its body, so a thread holds at most
        /// `capacity` such copies (1 MB); a larger body is written after its head, as it is.
        static let largest = 128 * 1024
        static let capacity = 8
        private static let threads = ThreadSpecificVariable<Rendered>()

        /// Where a kept answer's appended header has its value: the bytes before the head leave room for
        /// the longest, and the value ends at `end` whatever its length, just before the head's end and the
        /// body. A value as long as the last is written over it; one of another length moves the head
        /// (`prefix` bytes: all before the value) to sit just before it.
        struct Slot {
            /// The longest value written in place (a request id is at most 128 bytes); a longer one has its
            /// answer rendered for it alone.
            static let room = 256
            let name: HTTPField.Name
            let prefix: Int
            let end: Int
        }

        private struct Entry {
            let shared: AnyObject
            let slot: Slot?
            let secure: Bool
            let second: Int
            /// For a slot, the whole storage, the room before the head included.
            var bytes: ByteBuffer
            /// The length of the value in the slot now.
            var filled: Int

            /// The answer with `value` in its slot. The bytes are written in place unless the last answer
            /// given is still being sent (NIO holds it): then they are copied first, as a byte buffer's
            /// storage is when it is changed while shared.
            mutating func filling(_ value: String?) -> ByteBuffer {
                guard let slot, let value else { return bytes }
                let length = value.utf8.count
                if length != filled {
                    _ = try? bytes.copyBytes(at: slot.end - filled - slot.prefix, to: slot.end - length - slot.prefix, length: slot.prefix)
                    filled = length
                }
                bytes.setString(value, at: slot.end - length)
                var whole = bytes
                whole.moveReaderIndex(to: slot.end - length - slot.prefix)
                return whole
            }
        }

        private var entries: [Entry] = []
        /// Where the next entry goes once all are taken: the oldest made.
        private var next = 0

        static var ofThisThread: Rendered {
            if let made = threads.currentValue { return made }
            let made = Rendered()
            threads.currentValue = made
            return made
        }

        /// The kept answer for these shared parts and this second, with `appended`'s value in its slot.
        func find(_ shared: AnyObject, appended: PreparedResponse.Appended?, secure: Bool, second: Int) -> ByteBuffer? {
            for index in entries.indices where entries[index].shared === shared && entries[index].secure == secure {
                guard entries[index].slot?.name == appended?.name else { continue }
                guard entries[index].second == second else { return nil }
                return entries[index].filling(appended?.value)
            }
            return nil
        }

        /// Keeps `bytes`, the answer whose parts are `shared` (with `slot`, all of its storage, and the
        /// length of the value just written there, `filled`).
        func keep(_ bytes: ByteBuffer, of shared: AnyObject, slot: Slot? = nil, filled: Int = 0, secure: Bool, second: Int) {
            let entry = Entry(shared: shared, slot: slot, secure: secure, second: second, bytes: bytes, filled: filled)
            // Its own earlier second's entry, else one of an earlier second (that answer may be gone for
            // good: a list that changed), else a free one, else the oldest made.
            if let index = entries.firstIndex(where: { $0.shared === shared && $0.secure == secure && $0.slot?.name == slot?.name })
                ?? entries.firstIndex(where: { $0.second != second })
            {
                entries[index] = entry
            } else if entries.count < Self.capacity {
                entries.append(entry)
            } else {
                entries[next] = entry
                next = (next + 1) % Self.capacity
            }
        }
    }
}

/// The `Date` header's value (RFC 9110 IMF-fixdate), formatted once a second by each thread that asks: every
/// answer asks, on every event loop, and a value shared between them would have them wait on one another
/// for its lock.
enum HTTPDate {
    private static let cache = ThreadSpecificVariable<Cache>()

    /// One thread's: nothing else ever touches it.
    private final class Cache: @unchecked Sendable {
        var second = -1
        var text = ""
    }

    static var now: String { of(time(nil)) }

    /// The value for `second` (as `time(nil)` counts), formatted again only when the second changes.
    static func of(_ second: Int) -> String {
        let cache: Cache
        if let made = self.cache.currentValue {
            cache = made
        } else {
            cache = Cache()
            self.cache.currentValue = cache
        }
        if cache.second != second { (cache.second, cache.text) = (second, format(second)) }
        return cache.text
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
