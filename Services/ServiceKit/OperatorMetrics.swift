import Metrics
import Synchronization

/// What an operator watches on `/metrics`, beside the request counts and times (`RequestCounters`). Every
/// name is listed in the README; the services' `serve` commands bootstrap swift-metrics with the Prometheus
/// registry that `/metrics` writes out, and without that (in tests) these are not recorded.
///
/// A handle looked up by name and labels costs a registry lock and a dictionary search, so each one is made
/// once and kept here, in a table of its own kind. Finding it again costs one lock of our own and a search
/// keyed by the name and the label values as given (no key joined into a new string, no cast from an
/// existential): small beside a query or a call to another service, but not beside a read answered from
/// memory, which is why `RequestCounters` keeps its timers by route itself.
public enum OperatorMetrics {
    /// Time to answer (from the request head to the answer handed to the connection), by route and status
    /// class; `RequestCounters` keeps these.
    public static let requestDuration = "onthemap_http_request_duration_seconds"
    /// Requests refused or failed, by the reason the answer gives (`throttled`, `notLoggedIn`, `databaseUnavailable`…).
    public static let refusals = "onthemap_refusals_total"
    /// Connections open now, and connections closed by the server (by why: slow head or body, idle, a client gone).
    public static let openConnections = "onthemap_open_connections"
    public static let closedConnections = "onthemap_connections_closed_total"
    /// Queries being run or waiting for a pooled connection, their time (wait included), and failures by kind.
    public static let queriesInFlight = "onthemap_db_queries_in_flight"
    public static let queryDuration = "onthemap_db_query_duration_seconds"
    public static let queryFailures = "onthemap_db_query_failures_total"
    /// Calls to other services (locations-service, the identity provider, the geocoder), by target and result.
    public static let outboundCalls = "onthemap_outbound_requests_total"
    public static let outboundDuration = "onthemap_outbound_request_duration_seconds"

    /// More distinct label sets than this for one metric are counted under `other`: a label is never taken
    /// from what a client sent unchecked, but a bound keeps a mistake from growing the registry without end.
    static let labelSetsPerMetric = 200

    /// One kind of handle (timers, counters or meters), by name and labels.
    private struct Handles<Handle: Sendable>: Sendable {
        struct Key: Hashable {
            let name: String
            /// Label names and values in turn.
            let labels: [String]
        }

        var made: [Key: Handle] = [:]
        /// How many label sets each name has.
        var labelSets: [String: Int] = [:]
    }

    private static let timers = Mutex(Handles<Timer>())
    private static let counters = Mutex(Handles<Counter>())
    private static let meters = Mutex(Handles<Meter>())

    private static func handle<Handle: Sendable>(
        _ handles: borrowing Mutex<Handles<Handle>>, _ name: String, _ labels: [(String, String)],
        make: (String, [(String, String)]) -> Handle
    ) -> Handle {
        var flat: [String] = []
        flat.reserveCapacity(labels.count * 2)
        for (label, value) in labels {
            flat.append(label)
            flat.append(value)
        }
        let key = Handles<Handle>.Key(name: name, labels: flat)
        return handles.withLock { handles in
            if let found = handles.made[key] { return found }
            let count = handles.labelSets[name, default: 0]
            let made = count < labelSetsPerMetric ? make(name, labels) : make(name, labels.map { ($0.0, "other") })
            handles.made[key] = made
            handles.labelSets[name] = count + 1
            return made
        }
    }

    private static func timer(_ name: String, _ labels: [(String, String)]) -> Timer {
        handle(timers, name, labels) { Timer(label: $0, dimensions: $1, preferredDisplayUnit: .seconds) }
    }

    private static func counter(_ name: String, _ labels: [(String, String)]) -> Counter {
        handle(counters, name, labels) { Counter(label: $0, dimensions: $1) }
    }

    private static func meter(_ name: String) -> Meter {
        handle(meters, name, []) { Meter(label: $0, dimensions: $1) }
    }

    public static func refused(_ reason: String) {
        counter(refusals, [("reason", reason)]).increment()
    }

    public static func connectionOpened() { meter(openConnections).increment() }
    public static func connectionClosed() { meter(openConnections).decrement() }
    public static func closedConnection(_ reason: String) {
        counter(closedConnections, [("reason", reason)]).increment()
    }

    /// Runs one query, counted while it runs, timed, and its failure counted as an outage or an error.
    public static func query<T>(_ run: () async throws -> T) async throws -> T {
        let inFlight = meter(queriesInFlight)
        let start = ContinuousClock.now
        inFlight.increment()
        defer {
            inFlight.decrement()
            timer(queryDuration, []).recordInterval(since: start)
        }
        do {
            return try await run()
        } catch {
            counter(queryFailures, [("kind", Database.isOutage(error) ? "outage" : "error")]).increment()
            throw error
        }
    }

    /// One call to another service.
    public static func called(_ target: CallTarget, result: CallTarget.Result, since start: ContinuousClock.Instant) {
        target.calls[result.rawValue].increment()
        target.duration.recordInterval(since: start)
    }

    /// Another service called, with its handles found once, when it is first called: the gateway calls
    /// locations-service for every write it forwards, and finding a call's two handles by name and labels
    /// cost about 7,000 instructions each time. Every result's count is listed from then on, at 0 until
    /// one happens.
    public final class CallTarget: Sendable {
        /// Its raw value is its place in `allCases` (declared order, from 0).
        public enum Result: Int, CaseIterable, Sendable {
            /// It answered, whatever its status.
            case ok
            case unavailable
            case timeout
            case error

            var label: String { String(describing: self) }
        }

        public static let locationsService = CallTarget("locations-service")
        public static let identityProvider = CallTarget("identity-provider")
        public static let geocoder = CallTarget("geocoder")

        /// By `Result`, in its order.
        fileprivate let calls: [Counter]
        fileprivate let duration: Timer

        private init(_ name: String) {
            calls = Result.allCases.map { counter(outboundCalls, [("target", name), ("result", $0.label)]) }
            duration = timer(outboundDuration, [("target", name)])
        }
    }
}

extension Timer {
    func recordInterval(since start: ContinuousClock.Instant) {
        let elapsed = (ContinuousClock.now - start).components
        recordNanoseconds(elapsed.seconds * 1_000_000_000 + elapsed.attoseconds / 1_000_000_000)
    }
}

/// The name of an error value's case, for a metric's label: `throttled(retryAfter: 3)` → `throttled`.
public func caseName(_ value: some Error) -> String {
    String(String(describing: value).prefix { $0 != "(" })
}
