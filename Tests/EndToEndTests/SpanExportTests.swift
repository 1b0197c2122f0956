import Foundation
import Logging
import ServiceKit
import ServiceLifecycle
import TestSupport
import Testing
import Tracing

/// The exporter on its own, against the OTLP/HTTP receiver (which decodes with the OpenTelemetry protocol's
/// published definitions): what a span holds arrives as the protocol defines it, in batches sent as soon as
/// one is full, with the configured headers and compression; a busy collector is tried again; a full queue
/// drops the newest spans; and what is held at shutdown is sent.
@Suite struct SpanExportTests {
    typealias Exported = TracingTests.Span
    typealias Value = TracingTests.JSONValue

    /// An exporter to `receiver` running in a service group until `work` returns, then shut down gracefully.
    static func exporting(
        to receiver: OTLPReceiver, _ environment: [String: String], _ work: (OTLPTracer, SpanExporter) async throws -> Void
    ) async throws {
        let settings = try #require(
            try TraceExportSettings.fromEnvironment(
                serviceName: "span-test", ["OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:\(receiver.port)"].merging(environment) { $1 }))
        let exporter = try SpanExporter(settings: settings, logger: Logger(label: "otel"))
        let group = ServiceGroup(services: [exporter], logger: Logger(label: "test"))
        let running = Task { try await group.run() }
        try await work(OTLPTracer(exporter: exporter), exporter)
        await group.triggerGracefulShutdown()
        try await running.value
    }

    static func waitFor(_ receiver: OTLPReceiver, count: Int, within limit: Duration = .seconds(10)) async throws -> [Exported] {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            let spans = receiver.spans()
            if spans.count >= count { return spans }
            try await Task.sleep(for: .milliseconds(50))
        }
        return receiver.spans()
    }

    @Test(Needs.openTelemetryProto) func whatASpanHoldsArrivesInFullBatchesWithTheSettingsHeadersAndCompression() async throws {
        let receiver = try OTLPReceiver()
        defer { receiver.stop() }
        let environment = [
            "OTEL_BSP_SCHEDULE_DELAY": "60000", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "3", "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip",
            "OTEL_EXPORTER_OTLP_HEADERS": "authorization=Bearer%20s3cret,x-team=maps",
            "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=test,service.name=overridden", "OTEL_SERVICE_NAME": "span-test",
        ]
        var (rootID, serverID, linked) = ("", "", "")
        try await Self.exporting(to: receiver, environment) { tracer, _ in
            var caller = ServiceContext.topLevel
            tracer.extract(
                ["traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "tracestate": "team=maps"], into: &caller,
                using: DictionaryExtractor())
            let root = tracer.startSpan("POST /v1/StudentLocation", context: caller, ofKind: .server)
            root.attributes["http.response.status_code"] = 201
            root.attributes["ratio"] = 0.25
            root.attributes["cached"] = true
            root.attributes["names"] = ["a", "b"]
            // Long enough that its length, its span's and its batch's take three bytes each (past 16,383).
            root.attributes["long"] = String(repeating: "x", count: 20_000)
            let other = tracer.startSpan("another request", context: .topLevel, ofKind: .server)
            let hop = tracer.startSpan("locations-service POST", context: root.context, ofKind: .client)
            hop.addLink(SpanLink(context: other.context, attributes: [:]))
            hop.recordError(CocoaError(.fileNoSuchFile))
            hop.setStatus(SpanStatus(code: .error, message: "refused"))
            (rootID, serverID, linked) = (root.context.traceIDHex ?? "", root.context.spanIdentity!.spanIDHex, other.context.spanIdentity!.spanIDHex)
            var headers: [String: String] = [:]
            tracer.inject(hop.context, into: &headers, using: DictionaryInjector())
            #expect(headers["traceparent"] == "00-0af7651916cd43dd8448eb211c80319c-\(hop.context.spanIdentity!.spanIDHex)-01")
            #expect(headers["tracestate"] == "team=maps")
            for span in [hop, other, root] { span.end() }
            // Three more, in the same trace: the sixth fills the second batch, which goes at once.
            for index in 1...3 { tracer.startSpan("statement \(index)", context: root.context, ofKind: .client).end() }
            let firstTwo = try await Self.waitFor(receiver, count: 6)
            #expect(firstTwo.count == 6, "two full batches are sent without waiting for the minute's tick: \(firstTwo.map(\.name))")
            tracer.startSpan("held at shutdown", context: root.context, ofKind: .internal).end()
        }
        let spans = receiver.spans()
        #expect(spans.map(\.name).last == "held at shutdown", "\(spans.map(\.name))")
        #expect(spans.count == 7)
        #expect(Set(spans.map(\.export.number)) == [1, 2, 3], "batches of 3, 3 and 1")
        let root = try #require(spans.first { $0.name == "POST /v1/StudentLocation" })
        #expect(root.traceId == "0af7651916cd43dd8448eb211c80319c" && root.traceId == rootID)
        #expect(root.parentSpanId == "b7ad6b7169203331" && root.spanId == serverID && root.kind == 2)
        #expect(root.traceState == "team=maps")
        #expect(root.attributes["http.response.status_code"] == .number(201))
        #expect(root.attributes["ratio"] == .number(0.25) && root.attributes["cached"] == .bool(true))
        #expect(root.attributes["names"] == .array([.string("a"), .string("b")]))
        #expect(root.attributes["long"] == .string(String(repeating: "x", count: 20_000)))
        #expect(root.end >= root.start && root.start > 1_700_000_000_000_000_000)
        #expect(root.resource["service.name"] == .string("span-test") && root.resource["deployment.environment"] == .string("test"))
        #expect(root.scope == "onthemap")
        #expect(root.export.headers["content-encoding"] == "gzip" && root.export.headers["content-type"] == "application/x-protobuf")
        #expect(root.export.headers["authorization"] == "Bearer s3cret" && root.export.headers["x-team"] == "maps")
        let hop = try #require(spans.first { $0.name == "locations-service POST" })
        #expect(hop.parentSpanId == root.spanId && hop.traceId == root.traceId && hop.kind == 3)
        #expect(hop.links == [linked])
        #expect(hop.status == 2 && hop.statusMessage == "refused")
        let exception = try #require(hop.events.first)
        #expect(exception.name == "exception" && exception.attributes["exception.type"] == .string("CocoaError"))
        let other = try #require(spans.first { $0.name == "another request" })
        #expect(other.parentSpanId.isEmpty && other.traceId != root.traceId && other.status == 0)
        #expect(spans.filter { $0.name.hasPrefix("statement") }.allSatisfy { $0.parentSpanId == root.spanId && $0.kind == 3 })
    }

    @Test(Needs.openTelemetryProto) func aBusyCollectorIsTriedAgainAndASpanOfAnUnrecordedTraceIsNotSent() async throws {
        let receiver = try OTLPReceiver(busy: 2)
        defer { receiver.stop() }
        try await Self.exporting(to: receiver, ["OTEL_BSP_SCHEDULE_DELAY": "100"]) { tracer, _ in
            var notKept = ServiceContext.topLevel
            tracer.extract(["traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"], into: &notKept, using: DictionaryExtractor())
            let unrecorded = tracer.startSpan("not kept", context: notKept, ofKind: .server)
            #expect(!unrecorded.isRecording && unrecorded.context.traceIDHex == "0af7651916cd43dd8448eb211c80319c")
            unrecorded.end()
            tracer.startSpan("kept", context: .topLevel, ofKind: .server).end()
            let spans = try await Self.waitFor(receiver, count: 1)
            #expect(spans.map(\.name) == ["kept"])
            // Refused twice (503), then taken: the third try, after a pause of a second and then two.
            #expect(spans.first?.export.number == 3)
        }
    }

    @Test(Needs.openTelemetryProto) func aFullQueueKeepsWhatItHoldsAndDropsTheNewest() async throws {
        let receiver = try OTLPReceiver()
        defer { receiver.stop() }
        let settings = try #require(
            try TraceExportSettings.fromEnvironment(
                serviceName: "span-test",
                [
                    "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:\(receiver.port)/", "OTEL_BSP_MAX_QUEUE_SIZE": "3",
                    "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "2",
                ]))
        #expect(settings.endpoint == "http://127.0.0.1:\(receiver.port)/v1/traces")
        let exporter = try SpanExporter(settings: settings, logger: Logger(label: "otel"))
        let tracer = OTLPTracer(exporter: exporter)
        // Ended before the exporter runs: the queue holds three.
        for index in 1...5 { tracer.startSpan("span \(index)", context: .topLevel, ofKind: .internal).end() }
        let group = ServiceGroup(services: [exporter], logger: Logger(label: "test"))
        let running = Task { try await group.run() }
        _ = try await Self.waitFor(receiver, count: 3)
        await group.triggerGracefulShutdown()
        try await running.value
        #expect(receiver.spans().map(\.name).sorted() == ["span 1", "span 2", "span 3"])
    }

    @Test func aCollectorAwayHoldsShutdownNoLongerThanOneExportTimeout() async throws {
        // Nothing listens there: every try fails at once, and is tried again after a pause.
        let settings = try #require(
            try TraceExportSettings.fromEnvironment(
                serviceName: "span-test",
                [
                    "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:\(freePort())", "OTEL_BSP_EXPORT_TIMEOUT": "2500",
                    "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "1",
                ]))
        let exporter = try SpanExporter(settings: settings, logger: Logger(label: "otel"))
        let tracer = OTLPTracer(exporter: exporter)
        // Six batches: sent one after another, each tried for up to 2.5 s, they would hold the exporter 6 s.
        for index in 1...6 { tracer.startSpan("span \(index)", context: .topLevel, ofKind: .internal).end() }
        let group = ServiceGroup(services: [exporter], logger: Logger(label: "test"))
        let running = Task { try await group.run() }
        try await Task.sleep(for: .milliseconds(300))
        let stopping = ContinuousClock.now
        await group.triggerGracefulShutdown()
        try await running.value
        let took = ContinuousClock.now - stopping
        #expect(took < .milliseconds(2500 + 1000), "stopped in \(took): one export timeout (2.5 s) in all, whatever is held")
    }
}

struct DictionaryExtractor: Extractor {
    func extract(key: String, from carrier: [String: String]) -> String? { carrier[key] }
}

struct DictionaryInjector: Injector {
    func inject(_ value: String, forKey key: String, into carrier: inout [String: String]) { carrier[key] = value }
}
