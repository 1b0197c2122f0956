/// One Server-Sent Events frame: the fields a frame may carry (comments are dropped).
public struct ServerSentEvent: Hashable, Sendable {
    public var id: String?
    public var event: String?
    public var data: String
}

/// Reads an event stream (text/event-stream) as bytes arrive, in any chunks: a value that takes bytes and
/// returns the frames they complete, so it is tested without a socket.
struct ServerSentEventParser: Sendable {
    private var line: [UInt8] = []
    private var frame = Frame()
    private var lastByteWasCR = false

    private struct Frame {
        var id: String?
        var event: String?
        var data: [String] = []
        var isEmpty: Bool { id == nil && event == nil && data.isEmpty }
    }

    /// The frames completed by `bytes`; a frame ends with an empty line (LF, CRLF or CR).
    mutating func consume(_ bytes: some Sequence<UInt8>) -> [ServerSentEvent] {
        var events: [ServerSentEvent] = []
        for byte in bytes {
            if byte == UInt8(ascii: "\n"), lastByteWasCR {
                lastByteWasCR = false
                continue
            }
            lastByteWasCR = byte == UInt8(ascii: "\r")
            if byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\r") {
                if let event = endLine() { events.append(event) }
            } else {
                line.append(byte)
            }
        }
        return events
    }

    private mutating func endLine() -> ServerSentEvent? {
        defer { line.removeAll(keepingCapacity: true) }
        guard !line.isEmpty else {
            defer { frame = Frame() }
            guard !frame.isEmpty else { return nil }
            return ServerSentEvent(id: frame.id, event: frame.event, data: frame.data.joined(separator: "\n"))
        }
        guard line.first != UInt8(ascii: ":") else { return nil }
        let colon = line.firstIndex(of: UInt8(ascii: ":")) ?? line.endIndex
        let name = String(decoding: line[..<colon], as: UTF8.self)
        var value = colon < line.endIndex ? line[(colon + 1)...] : []
        if value.first == UInt8(ascii: " ") { value = value.dropFirst() }
        let text = String(decoding: value, as: UTF8.self)
        switch name {
        case "id": frame.id = text
        case "event": frame.event = text
        case "data": frame.data.append(text)
        default: break
        }
        return nil
    }
}
