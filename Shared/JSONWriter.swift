/// Writes JSON byte for byte in the order the contract shows, which `JSONEncoder` does not promise.
///
/// Used for every response body whose exact bytes clients depend on, and for the pre-encoded hot read.
public struct JSONWriter: Sendable {
    public private(set) var bytes: [UInt8] = []
    private var needsComma: [Bool] = []

    public init(reservingCapacity capacity: Int = 256) {
        bytes.reserveCapacity(capacity)
    }

    public var string: String { String(decoding: bytes, as: UTF8.self) }

    public mutating func beginObject() {
        valuePrefix()
        bytes.append(UInt8(ascii: "{"))
        needsComma.append(false)
    }
    public mutating func endObject() {
        needsComma.removeLast()
        bytes.append(UInt8(ascii: "}"))
    }
    public mutating func beginArray() {
        valuePrefix()
        bytes.append(UInt8(ascii: "["))
        needsComma.append(false)
    }
    public mutating func endArray() {
        needsComma.removeLast()
        bytes.append(UInt8(ascii: "]"))
    }

    public mutating func key(_ name: String) {
        valuePrefix()
        appendQuoted(name)
        bytes.append(UInt8(ascii: ":"))
        afterKey = true
    }

    public mutating func string(_ value: String) {
        valuePrefix()
        appendQuoted(value)
    }
    public mutating func number(_ value: Double) {
        valuePrefix()
        bytes.append(contentsOf: Self.format(value).utf8)
    }
    public mutating func number(_ value: Int) {
        valuePrefix()
        bytes.append(contentsOf: String(value).utf8)
    }
    public mutating func bool(_ value: Bool) {
        valuePrefix()
        bytes.append(contentsOf: (value ? "true" : "false").utf8)
    }
    public mutating func null() {
        valuePrefix()
        bytes.append(contentsOf: "null".utf8)
    }

    /// Splices bytes that are already a complete JSON value.
    public mutating func raw(_ json: some Sequence<UInt8>) {
        valuePrefix()
        bytes.append(contentsOf: json)
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

    /// The value after a key belongs to it, so it writes no comma of its own.
    private var afterKey = false

    private mutating func valuePrefix() {
        if afterKey {
            afterKey = false
            return
        }
        guard !needsComma.isEmpty else { return }
        if needsComma[needsComma.count - 1] { bytes.append(UInt8(ascii: ",")) }
        needsComma[needsComma.count - 1] = true
    }

    /// Shortest text that reads back as the same double; integral values keep no `.0`.
    static func format(_ value: Double) -> String {
        precondition(value.isFinite, "JSON has no NaN or infinity")
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return "\(value)"
    }

    private mutating func appendQuoted(_ text: String) {
        bytes.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case 0x0A: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case 0x0D: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case 0x09: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                bytes.append(contentsOf: [
                    UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                    hex[Int(byte >> 4)], hex[Int(byte & 0xF)],
                ])
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }
}
