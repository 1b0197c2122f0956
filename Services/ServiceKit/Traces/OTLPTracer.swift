import Synchronization
import Tracing

/// The process's tracer once traces are on: spans named by W3C Trace Context, each handed on its end to
/// `SpanExporter`'s queue (an append under a lock; the exporter is woken once per batch, not per span).
///
/// A span is recorded when its trace is: one with no parent starts a recorded trace (the doors decide
/// beforehand whether to start one), one under a parent follows the parent's `sampled` flag (a span under an
/// unrecorded trace names itself for propagation and records nothing).
public struct OTLPTracer: Tracer {
    public typealias Span = RecordedSpan

    let exporter: SpanExporter

    public init(exporter: SpanExporter) {
        self.exporter = exporter
    }

    public func startSpan<Instant: TracerInstant>(
        _ operationName: String, context: @autoclosure () -> ServiceContext, ofKind kind: SpanKind, at instant: @autoclosure () -> Instant,
        function: String, file fileID: String, line: UInt
    ) -> RecordedSpan {
        var context = context()
        let parent = context.spanIdentity
        let identity = SpanIdentity(
            traceID: parent?.traceID ?? .random(), spanID: SpanIdentity.newID(), sampled: parent?.sampled ?? true,
            traceState: parent?.traceState ?? "")
        context.spanIdentity = identity
        return RecordedSpan(
            operationName, kind: kind, context: context, identity: identity, parentSpanID: parent?.spanID ?? 0,
            start: instant().nanosecondsSinceEpoch, exporter: identity.sampled ? exporter : nil)
    }

    /// Asks the exporter to send what it holds now rather than at its next tick.
    public func forceFlush() {
        exporter.exportSoon()
    }

    public func inject<Carrier, Inject: Injector>(_ context: ServiceContext, into carrier: inout Carrier, using injector: Inject)
    where Inject.Carrier == Carrier {
        guard let identity = context.spanIdentity else { return }
        injector.inject(identity.traceparent, forKey: "traceparent", into: &carrier)
        if !identity.traceState.isEmpty { injector.inject(identity.traceState, forKey: "tracestate", into: &carrier) }
    }

    /// A caller's span, from its `traceparent` (and `tracestate`); a header that is not one is ignored: the
    /// request starts a trace of its own.
    public func extract<Carrier, Extract: Extractor>(_ carrier: Carrier, into context: inout ServiceContext, using extractor: Extract)
    where Extract.Carrier == Carrier {
        guard let header = extractor.extract(key: "traceparent", from: carrier),
            let identity = SpanIdentity(traceparent: header, traceState: extractor.extract(key: "tracestate", from: carrier))
        else { return }
        context.spanIdentity = identity
    }
}

/// A span as it is recorded: what its work adds to it (attributes, events, links, status, a new name) under
/// a lock, and on its end, what it became, to the exporter's queue, once.
public final class RecordedSpan: Tracing.Span {
    public let context: ServiceContext
    let identity: SpanIdentity
    let parentSpanID: UInt64
    let kind: SpanKind
    let start: UInt64
    /// Nil for a span whose trace is not recorded.
    private let exporter: SpanExporter?
    private let state: Mutex<State>

    struct State {
        var name: String
        var attributes = SpanAttributes()
        var status: SpanStatus?
        var events: [SpanEvent] = []
        var links: [SpanLink] = []
        var ended = false
    }

    init(
        _ name: String, kind: SpanKind, context: ServiceContext, identity: SpanIdentity, parentSpanID: UInt64, start: UInt64,
        exporter: SpanExporter?
    ) {
        (self.context, self.identity, self.parentSpanID, self.kind, self.start) = (context, identity, parentSpanID, kind, start)
        self.exporter = exporter
        state = Mutex(State(name: name, ended: exporter == nil))
    }

    public var isRecording: Bool { state.withLock { !$0.ended } }

    public var operationName: String {
        get { state.withLock { $0.name } }
        set { state.withLock { if !$0.ended { $0.name = newValue } } }
    }

    public var attributes: SpanAttributes {
        get { state.withLock { $0.attributes } }
        set { state.withLock { if !$0.ended { $0.attributes = newValue } } }
    }

    /// An `ok` status is final (OpenTelemetry's rule: an instrumentation's later error does not undo it).
    public func setStatus(_ status: SpanStatus) {
        state.withLock { state in
            guard !state.ended, state.status?.code != .ok else { return }
            state.status = status
        }
    }

    public func addEvent(_ event: SpanEvent) {
        state.withLock { if !$0.ended { $0.events.append(event) } }
    }

    /// An `exception` event, as OpenTelemetry's semantic conventions name its attributes.
    public func recordError<Instant: TracerInstant>(_ error: any Error, attributes: SpanAttributes, at instant: @autoclosure () -> Instant) {
        var described = attributes
        described["exception.type"] = String(describing: type(of: error))
        described["exception.message"] = String(describing: error)
        addEvent(SpanEvent(name: "exception", at: instant(), attributes: described))
    }

    public func addLink(_ link: SpanLink) {
        state.withLock { if !$0.ended { $0.links.append(link) } }
    }

    public func end<Instant: TracerInstant>(at instant: @autoclosure () -> Instant) {
        guard let exporter else { return }
        let ended: FinishedSpan? = state.withLock { state in
            guard !state.ended else { return nil }
            state.ended = true
            return FinishedSpan(
                identity: identity, parentSpanID: parentSpanID, name: state.name, kind: kind, start: start,
                end: instant().nanosecondsSinceEpoch, attributes: state.attributes, status: state.status, events: state.events,
                links: state.links.compactMap { link in link.context.spanIdentity.map { (identity: $0, attributes: link.attributes) } })
        }
        if let ended { exporter.take(ended) }
    }
}

/// A span once ended: what is exported.
public struct FinishedSpan: Sendable {
    var identity: SpanIdentity
    var parentSpanID: UInt64
    var name: String
    var kind: SpanKind
    var start: UInt64
    var end: UInt64
    var attributes: SpanAttributes
    var status: SpanStatus?
    var events: [SpanEvent]
    var links: [(identity: SpanIdentity, attributes: SpanAttributes)]
}
