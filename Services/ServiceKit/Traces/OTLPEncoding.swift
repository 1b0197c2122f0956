import Tracing

/// Spans as OTLP/HTTP's protobuf body: an `ExportTraceServiceRequest` (opentelemetry-proto,
/// `collector/trace/v1`) holding one resource's spans under one instrumentation scope. Field numbers are
/// those of `trace/v1/trace.proto` and `common/v1/common.proto`.
enum OTLPEncoding {
    static func exportRequest(_ spans: some Collection<FinishedSpan>, resource: [(key: String, value: String)]) -> [UInt8] {
        var request = ProtobufWriter()
        request.message(1) { resourceSpans in  // ResourceSpans
            resourceSpans.message(1) { attributes in  // Resource
                for (key, value) in resource { attributes.message(1) { $0.keyValue(key, .string(value)) } }
            }
            resourceSpans.message(2) { scopeSpans in  // ScopeSpans
                scopeSpans.message(1) { $0.string(1, "onthemap") }  // InstrumentationScope.name
                for span in spans { scopeSpans.message(2) { $0.span(span) } }
            }
        }
        return request.bytes
    }
}

/// Protocol buffers' wire format, written field by field into one array. A nested message is written in
/// place after a byte kept for its length, which is moved up when the length takes more than one byte.
struct ProtobufWriter {
    private(set) var bytes: [UInt8] = []

    private mutating func varint(_ value: UInt64) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }

    private mutating func key(_ field: Int, _ wireType: UInt64) {
        varint(UInt64(field) << 3 | wireType)
    }

    mutating func varint(_ field: Int, _ value: UInt64) {
        key(field, 0)
        varint(value)
    }

    mutating func fixed64(_ field: Int, _ value: UInt64) {
        key(field, 1)
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    mutating func bytes(_ field: Int, _ value: some Collection<UInt8>) {
        key(field, 2)
        varint(UInt64(value.count))
        bytes.append(contentsOf: value)
    }

    mutating func string(_ field: Int, _ value: String) {
        bytes(field, value.utf8)
    }

    mutating func message(_ field: Int, _ write: (inout ProtobufWriter) -> Void) {
        key(field, 2)
        let lengthAt = bytes.count
        bytes.append(0)
        write(&self)
        let length = bytes.count - lengthAt - 1
        guard length >= 0x80 else {
            bytes[lengthAt] = UInt8(length)
            return
        }
        var width = 1
        while length >> (7 * width) != 0 { width += 1 }
        bytes.insert(contentsOf: repeatElement(0, count: width - 1), at: lengthAt + 1)
        for index in 0..<width {
            let digit = UInt8(truncatingIfNeeded: length >> (7 * index)) & 0x7F
            bytes[lengthAt + index] = index < width - 1 ? digit | 0x80 : digit
        }
    }

    /// A 64-bit id as its 8 bytes, most significant first (as the W3C headers write them).
    mutating func id(_ field: Int, _ value: UInt64) {
        withUnsafeBytes(of: value.bigEndian) { bytes(field, $0) }
    }
}

extension ProtobufWriter {
    mutating func span(_ span: FinishedSpan) {
        traceID(1, span.identity.traceID)
        id(2, span.identity.spanID)
        if !span.identity.traceState.isEmpty { string(3, span.identity.traceState) }
        if span.parentSpanID != 0 { id(4, span.parentSpanID) }
        string(5, span.name)
        varint(6, Self.kind(span.kind))
        fixed64(7, span.start)
        fixed64(8, span.end)
        attributes(9, span.attributes)
        for event in span.events {
            message(11) { written in  // Span.Event
                written.fixed64(1, event.nanosecondsSinceEpoch)
                written.string(2, event.name)
                written.attributes(3, event.attributes)
            }
        }
        for link in span.links {
            message(13) { written in  // Span.Link
                written.traceID(1, link.identity.traceID)
                written.id(2, link.identity.spanID)
                if !link.identity.traceState.isEmpty { written.string(3, link.identity.traceState) }
                written.attributes(4, link.attributes)
            }
        }
        if let status = span.status {
            message(15) { written in  // Status: message 2, code 3 (OK 1, ERROR 2)
                if let text = status.message { written.string(2, text) }
                written.varint(3, status.code == .ok ? 1 : 2)
            }
        }
    }

    private mutating func traceID(_ field: Int, _ trace: TraceID) {
        withUnsafeBytes(of: (trace.high.bigEndian, trace.low.bigEndian)) { bytes(field, $0) }
    }

    /// SpanKind: INTERNAL 1, SERVER 2, CLIENT 3, PRODUCER 4, CONSUMER 5.
    private static func kind(_ kind: SpanKind) -> UInt64 {
        switch kind {
        case .internal: 1
        case .server: 2
        case .client: 3
        case .producer: 4
        case .consumer: 5
        }
    }

    private mutating func attributes(_ field: Int, _ attributes: SpanAttributes) {
        // SpanAttributes is not a sequence: its own iteration is all there is.
        attributes.forEach({ name, value in message(field) { $0.keyValue(name, value) } })
    }

    /// KeyValue: key 1, value 2 (AnyValue).
    mutating func keyValue(_ key: String, _ value: SpanAttribute) {
        string(1, key)
        message(2) { $0.anyValue(value) }
    }

    /// AnyValue: string 1, bool 2, int 3, double 4, array 5 (ArrayValue, whose values are field 1).
    private mutating func anyValue(_ value: SpanAttribute) {
        switch value {
        case .string(let text): string(1, text)
        case .bool(let flag): varint(2, flag ? 1 : 0)
        case .int32(let number): varint(3, UInt64(bitPattern: Int64(number)))
        case .int64(let number): varint(3, UInt64(bitPattern: number))
        case .double(let number): fixed64(4, number.bitPattern)
        case .stringConvertible(let described): string(1, String(describing: described))
        case .stringArray(let texts): array(texts.map { .string($0) })
        case .boolArray(let flags): array(flags.map { .bool($0) })
        case .int32Array(let numbers): array(numbers.map { .int32($0) })
        case .int64Array(let numbers): array(numbers.map { .int64($0) })
        case .doubleArray(let numbers): array(numbers.map { .double($0) })
        case .stringConvertibleArray(let values): array(values.map { .string(String(describing: $0)) })
        default: break
        }
    }

    private mutating func array(_ values: [SpanAttribute]) {
        message(5) { array in
            for value in values { array.message(1) { $0.anyValue(value) } }
        }
    }
}
