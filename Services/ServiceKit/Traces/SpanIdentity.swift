import Synchronization
import Tracing

/// What names a span across processes (W3C Trace Context): its trace, its own id, whether its trace is
/// recorded, and the vendors' `tracestate`, carried in a `ServiceContext` to the work done under it.
public struct SpanIdentity: Sendable, Hashable {
    public var traceID: TraceID
    public var spanID: UInt64
    public var sampled: Bool
    /// The caller's `tracestate` as it came, passed on unread; empty when there was none.
    public var traceState: String

    public init(traceID: TraceID, spanID: UInt64, sampled: Bool, traceState: String = "") {
        (self.traceID, self.spanID, self.sampled, self.traceState) = (traceID, spanID, sampled, traceState)
    }

    /// The span's id as the W3C headers write it: 16 lowercase hex digits.
    public var spanIDHex: String { Self.hex(spanID) }

    /// The `traceparent` header naming this span (version 00).
    public var traceparent: String {
        var text = "00-"
        text.reserveCapacity(55)
        text += traceID.hex
        text += "-"
        text += SpanIdentity.hex(spanID)
        text += sampled ? "-01" : "-00"
        return text
    }

    /// The span a `traceparent` names, or nil when the header is not one (W3C Trace Context, §3.2: a
    /// version other than ff, lowercase hex, ids that are not all zeros; a later version may add fields).
    public init?(traceparent: some StringProtocol, traceState: String? = nil) {
        let bytes = Array(traceparent.utf8)
        guard bytes.count >= 55, bytes[2] == UInt8(ascii: "-"), bytes[35] == UInt8(ascii: "-"), bytes[52] == UInt8(ascii: "-"),
            let version = Self.number(bytes[0..<2]), version != 0xFF,
            version == 0 ? bytes.count == 55 : (bytes.count == 55 || bytes[55] == UInt8(ascii: "-")),
            let high = Self.number(bytes[3..<19]), let low = Self.number(bytes[19..<35]), high | low != 0,
            let span = Self.number(bytes[36..<52]), span != 0,
            let flags = Self.number(bytes[53..<55])
        else { return nil }
        self.init(traceID: TraceID(high: high, low: low), spanID: span, sampled: flags & 1 == 1, traceState: traceState ?? "")
    }

    /// Lowercase hex digits, as the header allows them, read as a number (at most 16 of them).
    private static func number(_ digits: ArraySlice<UInt8>) -> UInt64? {
        var value: UInt64 = 0
        for digit in digits {
            switch digit {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = value << 4 | UInt64(digit - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): value = value << 4 | UInt64(digit - UInt8(ascii: "a") + 10)
            default: return nil
            }
        }
        return value
    }

    static func hex(_ value: UInt64) -> String {
        withUnsafeBytes(of: value.bigEndian) { $0.hexString }
    }

    /// A new id for a span or a trace: never 0, and never the same twice in this process (SplitMix64 over a
    /// counter that starts at a random point, so two processes' ids do not follow each other).
    public static func newID() -> UInt64 {
        while true {
            var z = sequence.wrappingAdd(0x9E37_79B9_7F4A_7C15, ordering: .relaxed).newValue
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            z ^= z >> 31
            if z != 0 { return z }
        }
    }

    private static let sequence = Atomic<UInt64>(UInt64.random(in: .min ... .max))
}

/// A trace's 16 bytes, as two numbers (big-endian: `high` is the first eight bytes).
public struct TraceID: Sendable, Hashable {
    public var high: UInt64
    public var low: UInt64

    public init(high: UInt64, low: UInt64) {
        (self.high, self.low) = (high, low)
    }

    public static func random() -> TraceID {
        TraceID(high: SpanIdentity.newID(), low: SpanIdentity.newID())
    }

    /// The 32 lowercase hex digits the W3C headers and the logs name it by.
    public var hex: String { SpanIdentity.hex(high) + SpanIdentity.hex(low) }
}

extension ServiceContext {
    /// The span that work under this context is done in, or the caller's, as its `traceparent` named it.
    public var spanIdentity: SpanIdentity? {
        get { self[SpanIdentityKey.self] }
        set { self[SpanIdentityKey.self] = newValue }
    }

    /// Whether the trace this context is in is recorded.
    public var traceIsSampled: Bool { spanIdentity?.sampled == true }

    /// The trace this context is in, as hex digits.
    public var traceIDHex: String? { spanIdentity?.traceID.hex }
}

private enum SpanIdentityKey: ServiceContextKey {
    typealias Value = SpanIdentity
    static var nameOverride: String? { "span" }
}
