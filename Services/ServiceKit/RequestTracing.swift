import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NIOHTTP1
import OnTheMapShared
import PreparedHTTP
import ServiceLifecycle
import Synchronization
import Tracing

/// Traces of requests, exported over OTLP/HTTP (protobuf) when `OTEL_EXPORTER_OTLP_ENDPOINT` is set and
/// off otherwise: then no span is made at all, not even a no-op one, and each door pays one atomic load.
///
/// A request's span starts at whichever door answers it (`traced` before the router,
/// `RequestTracingMiddleware` in it) and is named after its route. The work it leads to is traced under it:
/// the session lookup, the hop to locations-service (which carries W3C `traceparent`), the service's own
/// request, its group commit and each database statement (named by its SQL, whose values are parameters
/// and never in it). A caller's `traceparent` is taken only from a trusted caller: by the gateway, from a
/// proxy in `TRUSTED_PROXIES`; by locations-service, from the gateway (every request it serves carries the
/// internal token). The OpenTelemetry settings (`OTEL_SERVICE_NAME`, `OTEL_BSP_SCHEDULE_DELAY`, ...) are read
/// as the specification names them.
///
/// Which requests are traced is `TraceSampling`'s to decide, at the door, before any span is made: a share
/// of them whole (every span of their work, in both services), and of the rest only those that fail or are
/// slow, each as its request's span alone. A request the door answers from memory under 500 leaves no span:
/// it did nothing worth a trace.
public enum RequestTracing {
    private static let bootstrapped = Atomic<Bool>(false)

    public static var enabled: Bool { bootstrapped.load(ordering: .relaxed) }

    /// The exporter's background work, once `bootstrap` made one: it runs with the application's services.
    public static var exporter: (any Service)? { tracer?.exporter }

    /// Makes the process's tracer when the environment names an OTLP endpoint; the first call decides.
    public static func bootstrap(serviceName: String, environment: [String: String] = ProcessInfo.processInfo.environment) throws {
        guard !bootstrapped.load(ordering: .relaxed),
            let settings = try TraceExportSettings.fromEnvironment(serviceName: serviceName, environment)
        else { return }
        let sampling = try TraceSampling(environment: environment)
        // The exporter's own troubles (a collector away) in the service's log, in its format.
        let exporter = try SpanExporter(settings: settings, logger: Logger(label: "otel"))
        let tracer = OTLPTracer(exporter: exporter)
        InstrumentationSystem.bootstrap(tracer)
        made.withLock { $0 = tracer }
        TraceSampling.current = sampling
        bootstrapped.store(true, ordering: .relaxed)
    }

    /// The tracer `bootstrap` made, which the services' spans are started with: asked of the instrumentation
    /// system instead, it would be looked for and cast on every call (about 1,500 instructions a span).
    public static var tracer: OTLPTracer? { made.withLock { $0 } }
    private static let made = Mutex<OTLPTracer?>(nil)

    /// Whether work under `context` is traced: tracing is on and the context is a kept request's. Each
    /// span the services make inside a request asks this first.
    public static func traces(_ context: ServiceContext?) -> Bool {
        enabled && context?.traceIsSampled == true
    }

    /// The door before the router, traced and logged: each request it answers gets an access line, and, when
    /// kept, a span named after its route once it is known to do work (a deferred answer, whose work is told
    /// the span's context when it runs, or a stream); an answer from memory gets none unless it is a 5xx.
    /// `trustedCallers` nil: every caller's `traceparent` is taken.
    public static func traced(_ answer: @escaping PreparedAnswer, trustedCallers: TrustedProxies?) -> PreparedAnswer {
        { request in
            guard enabled || AccessLog.enabled else { return answer(request) }
            let record = RequestRecord(
                method: request.method.rawValue, caller: CallerHeaders(request.header), peer: request.peer, trustedCallers: trustedCallers,
                startingSpan: false)
            // Left to the router, which records it in turn.
            guard let (handling, route) = answer(request) else { return nil }
            switch handling {
            case .answer(let response):
                record.finish(route: route, status: response.status.code, answerHeaders: response.headers)
                return (handling, route)
            case .deferred(let deferral):
                let working = record.started()
                let traced = PreparedDeferral(bodyLimit: deferral.bodyLimit) { body, eventLoop, peer, _, answer in
                    deferral.respond(body, eventLoop, peer, working.context) { response in
                        working.finish(route: route, status: response.status.code, answerHeaders: response.headers)
                        answer(response)
                    }
                }
                return (.deferred(traced), route)
            case .stream(let opening):
                record.started().finish(route: route, status: 200, answerHeaders: opening.headers)
                return (handling, route)
            }
        }
    }

    /// The context a trusted caller's `traceparent` names, or none. The peer's address is looked at only
    /// when there is a `traceparent` to take: written out as text, it would cost every request an allocation.
    static func parentContext(_ caller: CallerHeaders, peer: SocketAddress?, trusted: TrustedProxies) -> ServiceContext {
        guard caller.traceparent != nil, let address = peer?.ipAddress, trusted.contains(address) else { return .topLevel }
        return callersContext(caller)
    }

    static func callersContext(_ caller: CallerHeaders) -> ServiceContext {
        var context = ServiceContext.topLevel
        tracer?.extract(caller, into: &context, using: CallerHeaders.Propagation())
        return context
    }

    /// Adds the W3C trace headers of `context` to a request going out.
    public static func inject(_ context: ServiceContext, into headers: inout HTTPFields) {
        tracer?.inject(context, into: &headers, using: HTTPFieldsPropagation())
    }

    /// A `traceparent` that says "not kept", for a request going out from work that is not traced: the
    /// service it goes to does not trace it either (but for a failure or a slow answer, as its own).
    public static func injectNotKept(into headers: inout HTTPFields) {
        // Ids that name nothing recorded: they must only be valid.
        let identity = SpanIdentity(traceID: .random(), spanID: SpanIdentity.newID(), sampled: false)
        headers[CallerHeaders.traceparent] = identity.traceparent
    }

    /// Ends a span with the status its work answered (an error from 500).
    public static func end(_ span: any Span, status: Int) {
        span.attributes["http.response.status_code"] = status
        if status >= 500 { span.setStatus(SpanStatus(code: .error)) }
        span.end()
    }

    public static func end(_ span: any Span, error: any Error) {
        span.recordError(error)
        span.setStatus(SpanStatus(code: .error))
        span.end()
    }

    /// A database statement's span name: what it changes, or else reads, and the table ("INSERT
    /// locations.events", "SELECT auth.sessions"); its first word alone when it names no table.
    ///
    /// Worked out once per statement text: a traced request names each of its statements, and in a profile
    /// of posts at the default sampler, reading their words took 3.4% of locations-service's time, all of
    /// it in the tenth of the posts that were traced. At most `namesKept` are kept, all forgotten when
    /// full, so that texts made per call cannot grow the table without end.
    public static func statementName(_ sql: String) -> String {
        statementNames.value(for: sql, making: readStatementName)
    }

    private static let statementNames = KeptResults<String, String>(capacity: namesKept)
    static let namesKept = 256

    private static func readStatementName(_ sql: String) -> String {
        let original = sql.split(whereSeparator: { $0.isWhitespace || "(),;".contains($0) }).map(String.init)
        let words = original.map { $0.uppercased() }
        /// The table named at `index`, if a name is there (not a subquery, a function or a clause).
        func table(at index: Int) -> String? {
            guard words.indices.contains(index), original[index].first?.isLetter == true,
                !["SELECT", "UNNEST", "LATERAL", "SET", "ONLY"].contains(words[index])
            else { return nil }
            return original[index]
        }
        for index in words.indices {
            let previous = index > 0 ? words[index - 1] : ""
            switch (previous, words[index]) {
            case ("INSERT", "INTO"): if let name = table(at: index + 1) { return "INSERT \(name)" }
            case ("DELETE", "FROM"): if let name = table(at: index + 1) { return "DELETE \(name)" }
            case (let before, "UPDATE") where before != "DO" && before != "FOR": if let name = table(at: index + 1) { return "UPDATE \(name)" }
            default: continue
            }
        }
        if let from = words.firstIndex(of: "FROM"), let name = table(at: from + 1) { return "\(words[0]) \(name)" }
        return words.first ?? "statement"
    }
}

/// The router's door, traced and logged: each request gets a span named after its route (under the span of
/// a trusted caller's `traceparent`; every caller's when `trustedCallers` is nil, for a service that
/// authenticates its callers) and an access line.
public struct RequestTracingMiddleware<Context: RequestContext>: RouterMiddleware {
    let trustedCallers: TrustedProxies?

    public init(trustedCallers: TrustedProxies?) {
        self.trustedCallers = trustedCallers
    }

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard RequestTracing.enabled || AccessLog.enabled else { return try await next(request, context) }
        let peer = (context as? any PreparedRequestContext)?.remoteAddress
        let record = RequestRecord(
            method: request.method.rawValue, caller: CallerHeaders { request.headers[$0] }, peer: peer, trustedCallers: trustedCallers)
        do {
            let response = try await ServiceContext.withValue(record.context) { try await next(request, context) }
            record.finish(route: context.route(of: request), status: response.status.code, answerHeaders: response.headers)
            return response
        } catch let error as any HTTPResponseError {
            record.finish(route: context.route(of: request), status: error.status.code)
            throw error
        } catch {
            record.finish(route: context.route(of: request), status: 500, error: error)
            throw error
        }
    }
}

/// One request as its door records it: its span, when traces are on and `TraceSampling` keeps it, and its
/// access line, when `LOG_FORMAT=json`.
struct RequestRecord: Sendable {
    private(set) var span: RecordedSpan?
    /// What the request's work is traced under: its span's context, or none.
    var context: ServiceContext { span?.context ?? .topLevel }
    let start = ContinuousClock.now
    /// When the request came, on the tracer's clock, while tracing is on: a span made later starts there.
    let since: DefaultTracerClock.Instant?
    /// Kept whole (by this door's chance or its caller's decision).
    let kept: Bool
    /// A caller that did not keep the request (the gateway, over the hop) keeps it if slow itself, and its
    /// long polls are slow by design: only a request this door decided on is kept for being slow.
    let slowIsKept: Bool
    let parent: ServiceContext
    let method: String
    let requestID: String?
    let client: String?

    /// `startingSpan`: the span of a kept request starts now (the router's door, whose work follows at
    /// once); else only when `started()` says the request does work.
    init(method: String, caller: CallerHeaders, peer: SocketAddress?, trustedCallers: TrustedProxies?, startingSpan: Bool = true) {
        self.method = method
        if RequestTracing.enabled {
            let parent: ServiceContext
            if let trustedCallers {
                parent = RequestTracing.parentContext(caller, peer: peer, trusted: trustedCallers)
            } else {
                parent = RequestTracing.callersContext(caller)
            }
            // A caller's decision stands (the gateway's, over the hop); a request of its own is kept by chance.
            let callerDecided = !parent.isEmpty
            (self.parent, since, slowIsKept) = (parent, DefaultTracerClock.now, !callerDecided)
            kept = callerDecided ? parent.traceIsSampled : TraceSampling.current.keepsNext()
        } else {
            (parent, since, slowIsKept, kept) = (.topLevel, nil, false, false)
        }
        span = kept && startingSpan ? Self.span(method, parent: parent, since: since) : nil
        // For the access line alone: not looked up while there is none.
        (requestID, client) =
            AccessLog.enabled
            ? (caller.requestID, (trustedCallers ?? .none).clientAddress(peer: peer?.ipAddress, forwardedFor: caller.forwardedFor))
            : (nil, nil)
    }

    private static func span(_ method: String, parent: ServiceContext, since: DefaultTracerClock.Instant?) -> RecordedSpan? {
        let span = RequestTracing.tracer?.startSpan(method, context: parent, ofKind: .server, at: since ?? DefaultTracerClock.now)
        span?.attributes["http.request.method"] = method
        return span
    }

    /// This record with its span, when kept and not started yet, started as of when the request came.
    func started() -> RequestRecord {
        guard kept, span == nil else { return self }
        var started = self
        started.span = Self.span(method, parent: parent, since: since)
        return started
    }

    /// The answer is decided: the span ends, named after the route, and the access line is written (with
    /// the request id the answer carries, or else the one the request did). A kept request with no span
    /// yet (answered from memory) gets one only for a 5xx; a request not kept that failed or was slow gets
    /// its span now, alone, marked with why.
    /// `answerHeaders` are read for the access line alone.
    func finish(route: String, status: Int, answerHeaders: @autoclosure () -> HTTPFields = [:], error: (any Error)? = nil) {
        let failed = status >= 500 || error != nil
        if let span {
            span.operationName = route
            if let error { span.recordError(error) }
            RequestTracing.end(span, status: status)
        } else if let since, kept ? failed : failed || (slowIsKept && ContinuousClock.now - start >= TraceSampling.current.slow) {
            if let span = RequestTracing.tracer?.startSpan(route, context: kept ? parent : .topLevel, ofKind: .server, at: since) {
                span.attributes["http.request.method"] = method
                if !kept { span.attributes["onthemap.trace.kept"] = failed ? "failed" : "slow" }
                if let error { span.recordError(error) }
                RequestTracing.end(span, status: status)
            }
        }
        guard AccessLog.enabled else { return }
        AccessLog.line(
            route: route, status: status, since: start, requestID: answerHeaders()[.requestID] ?? requestID,
            traceID: context.traceIDHex, client: client)
    }
}

/// `LOG_FORMAT=json`: one line per request answered, at either door (route, status, duration, request id,
/// trace id, client address), at level info.
public enum AccessLog {
    private static let on = Atomic<Bool>(false)
    static var enabled: Bool { on.load(ordering: .relaxed) }
    private static let logger = {
        var logger = Logger(label: "access")
        logger.logLevel = .info
        return logger
    }()

    static func start() { on.store(true, ordering: .relaxed) }

    static func line(route: String, status: Int, since start: ContinuousClock.Instant, requestID: String?, traceID: String?, client: String?) {
        guard enabled else { return }
        let elapsed = ContinuousClock.now - start
        let milliseconds = Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
        var metadata: Logger.Metadata = [
            "route": "\(route)", "status": "\(status)", "duration_ms": "\(String(format: "%.3f", milliseconds))",
            "request_id": "\(requestID ?? "-")", "client": "\(client ?? "-")",
        ]
        if let traceID { metadata["trace_id"] = "\(traceID)" }
        logger.info("request", metadata: metadata)
    }
}

/// W3C trace headers written to a request's fields.
struct HTTPFieldsPropagation: Injector {
    func inject(_ value: String, forKey key: String, into carrier: inout HTTPFields) {
        if let name = HTTPField.Name(key) { carrier[name] = value }
    }
}

/// What a door reads of a request for its trace and its access line, from either door's request.
struct CallerHeaders {
    let traceparent: String?
    let tracestate: String?
    let requestID: String?
    /// `X-Forwarded-For`, every line joined.
    let forwardedFor: [String]

    /// Only what will be read: `tracestate` beside a `traceparent`, the others for an access line.
    init(_ header: (HTTPField.Name) -> String?) {
        traceparent = header(Self.traceparent)
        tracestate = traceparent == nil ? nil : header(Self.tracestate)
        (requestID, forwardedFor) =
            AccessLog.enabled ? (header(.requestID), header(TrustedProxies.forwardedFor).map { [$0] } ?? []) : (nil, [])
    }

    static let traceparent = HTTPField.Name("traceparent")!
    static let tracestate = HTTPField.Name("tracestate")!

    /// The W3C trace headers read from them.
    struct Propagation: Extractor {
        func extract(key: String, from carrier: CallerHeaders) -> String? {
            switch key {
            case "traceparent": carrier.traceparent
            case "tracestate": carrier.tracestate
            default: nil
            }
        }
    }
}

/// Which requests are traced: `TRACE_SAMPLE_RATIO` of them whole (0 to 1; default 0.1), and of the rest,
/// each that fails (a 5xx) or takes `TRACE_SLOW_MS` or longer (default 500) as its request's span alone.
/// A request from a caller that decided already (`traceparent`, from a trusted caller) is traced as it says.
public struct TraceSampling: Sendable, Equatable {
    public var ratio: Double
    public var slow: Duration

    public static let defaultRatio = 0.1
    public static let defaultSlow = Duration.milliseconds(500)

    public init(ratio: Double = defaultRatio, slow: Duration = defaultSlow) {
        self.ratio = ratio
        self.slow = slow
    }

    public init(environment: [String: String]) throws(ConfigurationError) {
        self.init()
        if let text = environment["TRACE_SAMPLE_RATIO"] {
            guard let value = Double(text), (0...1).contains(value) else {
                throw ConfigurationError("TRACE_SAMPLE_RATIO must be a number from 0 to 1, not \(text)")
            }
            ratio = value
        }
        if let text = environment["TRACE_SLOW_MS"] {
            guard let value = Int(text), value >= 0 else {
                throw ConfigurationError("TRACE_SLOW_MS must be a whole number of milliseconds, not \(text)")
            }
            slow = .milliseconds(value)
        }
    }

    /// What `RequestTracing.bootstrap` set; read on every request while tracing is on.
    static var current: TraceSampling {
        get {
            TraceSampling(
                ratio: Double(bitPattern: ratioBits.load(ordering: .relaxed)), slow: .nanoseconds(slowNanoseconds.load(ordering: .relaxed)))
        }
        set {
            ratioBits.store(newValue.ratio.bitPattern, ordering: .relaxed)
            slowNanoseconds.store(Int64(newValue.slow / .nanoseconds(1)), ordering: .relaxed)
        }
    }
    private static let ratioBits = Atomic<UInt64>(defaultRatio.bitPattern)
    private static let slowNanoseconds = Atomic<Int64>(Int64(defaultSlow / .nanoseconds(1)))

    /// Whether the next request is kept whole: true for `ratio` of them, by the cheap sequence span ids
    /// come from, not the system's random source, which costs a system call.
    func keepsNext() -> Bool {
        guard ratio < 1 else { return true }
        guard ratio > 0 else { return false }
        return Double(SpanIdentity.newID() >> 11) / Double(1 << 53) < ratio
    }
}
