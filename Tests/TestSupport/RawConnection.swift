import Foundation

/// A blocking HTTP/1.1 connection for writing a request in pieces.
public final class RawConnection: @unchecked Sendable {
    private let fd: Int32

    public init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else { throw HarnessError("connect failed: \(errno)") }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    public func send(_ text: some StringProtocol) throws {
        try send(bytes: Array(text.utf8))
    }

    /// Any bytes, valid UTF-8 or not.
    public func send(bytes: [UInt8]) throws {
        guard bytes.withUnsafeBytes({ Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == bytes.count else {
            throw HarnessError("send failed: \(errno)")
        }
    }

    /// Reads until the peer has sent a whole response (headers plus Content-Length bytes) or closes. An
    /// interim answer before it (`100 Continue`, a head alone) is read past and left out.
    public func receiveResponse() throws -> String {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count <= 0 { break }
            received += buffer[0..<count]
            var text = Substring(String(decoding: received, as: UTF8.self))
            while text.hasPrefix("HTTP/1.1 1"), let end = text.range(of: "\r\n\r\n") { text = text[end.upperBound...] }
            if let end = text.range(of: "\r\n\r\n"),
                let lengthLine = text[..<end.lowerBound].split(separator: "\r\n").first(where: { $0.lowercased().hasPrefix("content-length:") }),
                let length = Int(lengthLine.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)),
                text.utf8.count - text[..<end.upperBound].utf8.count >= length
            {
                return String(text)
            }
        }
        return String(decoding: received, as: UTF8.self)
    }

    /// Reads `count` whole responses, each framed by its Content-Length (none means no body), and returns
    /// their status codes in order; fewer when the peer closes or stops sending for the receive timeout.
    /// Searched with memchr: tests read hundreds of thousands of answers with it.
    public func receiveStatuses(_ count: Int) throws -> [Int] {
        var statuses: [Int] = []
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while statuses.count < count {
            let read = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if read <= 0 { return statuses }
            received += buffer[0..<read]
            let used = received.withUnsafeBytes { bytes -> Int in
                var start = 0
                while statuses.count < count, let (status, length) = Self.response(in: bytes, from: start) {
                    statuses.append(status)
                    start += length
                }
                return start
            }
            received.removeFirst(used)
        }
        return statuses
    }

    /// The status and length of the whole response that starts at `start`, if it has all arrived.
    private static func response(in bytes: UnsafeRawBufferPointer, from start: Int) -> (status: Int, length: Int)? {
        guard let base = bytes.baseAddress, bytes.count - start > 12 else { return nil }
        let from = base + start
        let available = bytes.count - start
        guard let headEnd = find("\r\n\r\n", in: from, length: available) else { return nil }
        let headLength = headEnd + 4
        // "HTTP/1.1 200 ": the status is the three digits after the first space.
        let status = (9..<12).reduce(0) { $0 * 10 + Int(from.load(fromByteOffset: $1, as: UInt8.self) - 48) }
        var bodyLength = 0
        for name: StaticString in ["\r\nContent-Length:", "\r\ncontent-length:"] {
            guard let field = find(name, in: from, length: headLength) else { continue }
            var digit = from + field + name.utf8CodeUnitCount
            while digit.load(as: UInt8.self) == UInt8(ascii: " ") { digit += 1 }
            while case let byte = digit.load(as: UInt8.self), byte >= 48, byte <= 57 {
                bodyLength = bodyLength * 10 + Int(byte - 48)
                digit += 1
            }
            break
        }
        guard available >= headLength + bodyLength else { return nil }
        return (status, headLength + bodyLength)
    }

    /// Where `needle` first starts in the `length` bytes at `bytes`.
    private static func find(_ needle: StaticString, in bytes: UnsafeRawPointer, length: Int) -> Int? {
        let first = Int32(needle.utf8Start.pointee)
        var offset = 0
        while offset + needle.utf8CodeUnitCount <= length, let hit = memchr(bytes + offset, first, length - offset) {
            let at = bytes.distance(to: UnsafeRawPointer(hit))
            guard at + needle.utf8CodeUnitCount <= length else { return nil }
            if memcmp(bytes + at, needle.utf8Start, needle.utf8CodeUnitCount) == 0 { return at }
            offset = at + 1
        }
        return nil
    }

    /// Reads until the end of a response's head (a streamed answer's body need not end), or the peer closes.
    public func receiveHead() throws -> String {
        var received: [UInt8] = []
        var byte: UInt8 = 0
        while !received.suffix(4).elementsEqual("\r\n\r\n".utf8), recv(fd, &byte, 1, 0) == 1 {
            received.append(byte)
        }
        return String(decoding: received, as: UTF8.self)
    }

    /// Reads until what arrived holds `marker` (within the 10 s receive timeout), or the peer closes; all
    /// that arrived.
    public func receive(until marker: String) throws -> String {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !String(decoding: received, as: UTF8.self).contains(marker) {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count <= 0 { break }
            received += buffer[0..<count]
        }
        return String(decoding: received, as: UTF8.self)
    }

    /// Waits up to `limit` for the peer to close the connection (reading and dropping anything it sends
    /// first); how long that took, or nil when it stayed open.
    public func closedByPeer(within limit: Duration) -> Duration? {
        let start = ContinuousClock.now
        var buffer = [UInt8](repeating: 0, count: 4096)
        while ContinuousClock.now - start < limit {
            let left = limit - (ContinuousClock.now - start)
            let microseconds = max(1_000, Int(left.components.seconds) * 1_000_000 + Int(left.components.attoseconds / 1_000_000_000_000))
            var timeout = timeval(tv_sec: microseconds / 1_000_000, tv_usec: Int(microseconds % 1_000_000))
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count == 0 || (count < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                return ContinuousClock.now - start
            }
        }
        return nil
    }

    /// Ends what this side sends and goes on reading, as a client that has no more requests does: the peer
    /// reads the end, and `closedByPeer` sees it close its side.
    public func finishSending() {
        shutdown(fd, Int32(SHUT_WR))
    }

    /// Closes the connection now, as a client that goes away does.
    public func close() {
        shutdown(fd, Int32(SHUT_RDWR))
    }

    deinit { Glibc.close(fd) }
}

/// The reads as a test's task makes them: each waits on a thread of its own (`blocking`). A read holds its
/// thread until the peer answers, for as long as the receive timeout, and Swift's cooperative pool has one
/// thread per core for every test of the run and every server those tests run in this process: two reads
/// waiting there at once stopped them all for 10 s, long enough for other tests' 2 s database deadlines to
/// pass. Swift picks these over the blocking reads in an asynchronous context, so a test's task cannot
/// make a blocking read by mistake.
extension RawConnection {
    public func receiveResponse() async throws -> String { try await blocking { try self.receiveResponse() } }
    public func receiveStatuses(_ count: Int) async throws -> [Int] { try await blocking { try self.receiveStatuses(count) } }
    public func receiveHead() async throws -> String { try await blocking { try self.receiveHead() } }
    public func receive(until marker: String) async throws -> String { try await blocking { try self.receive(until: marker) } }
    public func closedByPeer(within limit: Duration) async -> Duration? {
        (try? await blocking { self.closedByPeer(within: limit) }) ?? nil
    }
}
