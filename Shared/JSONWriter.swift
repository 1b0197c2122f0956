import NIOCore

/// Writes JSON byte for byte in the order the contract shows, which `JSONEncoder` does not promise.
///
/// Used for every response body whose exact bytes clients depend on, for every event payload in the log
/// and on the live feed, and for the pre-encoded hot read. It writes into the `ByteBuffer` that NIO then
/// sends as it is.
public struct JSONWriter: Sendable {
    public private(set) var buffer: ByteBuffer
    private var needsComma: [Bool] = []
    /// The value after a key belongs to it, so it writes no comma of its own.
    private var afterKey = false

    public init(reservingCapacity capacity: Int = 256) {
        buffer = ByteBufferAllocator().buffer(capacity: capacity)
    }

    public var string: String { String(buffer: buffer) }

    public mutating func beginObject() {
        valuePrefix()
        buffer.writeInteger(UInt8(ascii: "{"))
        needsComma.append(false)
    }
    public mutating func endObject() {
        needsComma.removeLast()
        buffer.writeInteger(UInt8(ascii: "}"))
    }
    public mutating func beginArray() {
        valuePrefix()
        buffer.writeInteger(UInt8(ascii: "["))
        needsComma.append(false)
    }
    public mutating func endArray() {
        needsComma.removeLast()
        buffer.writeInteger(UInt8(ascii: "]"))
    }

    public mutating func key(_ name: String) {
        valuePrefix()
        writeQuoted(name)
        buffer.writeInteger(UInt8(ascii: ":"))
        afterKey = true
    }

    public mutating func string(_ value: String) {
        valuePrefix()
        writeQuoted(value)
    }
    public mutating func number(_ value: Double) {
        valuePrefix()
        buffer.writeString(Self.format(value))
    }
    public mutating func number(_ value: Int) {
        valuePrefix()
        buffer.writeString(String(value))
    }
    public mutating func bool(_ value: Bool) {
        valuePrefix()
        buffer.writeStaticString(value ? "true" : "false")
    }
    public mutating func null() {
        valuePrefix()
        buffer.writeStaticString("null")
    }

    /// Splices bytes that are already a complete JSON value.
    public mutating func raw(_ json: ByteBuffer) {
        valuePrefix()
        buffer.writeImmutableBuffer(json)
    }

    public mutating func field(_ name: String, _ value: String) {
        key(name)
        string(value)
    }
    public mutating func field(_ name: String, _ value: Double) {
        key(name)
        number(value)
    }
    public mutating func field(_ name: String, _ value: Int) {
        key(name)
        number(value)
    }

    private mutating func valuePrefix() {
        if afterKey {
            afterKey = false
            return
        }
        guard !needsComma.isEmpty else { return }
        if needsComma[needsComma.count - 1] { buffer.writeInteger(UInt8(ascii: ",")) }
        needsComma[needsComma.count - 1] = true
    }

    /// Shortest text that reads back as the same double; integral values keep no `.0`.
    static func format(_ value: Double) -> String {
        precondition(value.isFinite, "JSON has no NaN or infinity")
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return "\(value)"
    }

    /// A string between quotes, escaped as JSON requires. Most text needs no escape at all, and is copied
    /// in one piece.
    private mutating func writeQuoted(_ text: String) {
        buffer.writeInteger(UInt8(ascii: "\""))
        if text.utf8.allSatisfy({ $0 >= 0x20 && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") }) {
            buffer.writeString(text)
        } else {
            for byte in text.utf8 { writeEscaped(byte) }
        }
        buffer.writeInteger(UInt8(ascii: "\""))
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    private mutating func writeEscaped(_ byte: UInt8) {
        switch byte {
        case UInt8(ascii: "\""): buffer.writeStaticString("\\\"")
        case UInt8(ascii: "\\"): buffer.writeStaticString("\\\\")
        case 0x0A: buffer.writeStaticString("\\n")
        case 0x0D: buffer.writeStaticString("\\r")
        case 0x09: buffer.writeStaticString("\\t")
        case 0..<0x20:
            buffer.writeStaticString("\\u00")
            buffer.writeInteger(Self.hexDigits[Int(byte >> 4)])
            buffer.writeInteger(Self.hexDigits[Int(byte & 0xF)])
        default: buffer.writeInteger(byte)
        }
    }
}
