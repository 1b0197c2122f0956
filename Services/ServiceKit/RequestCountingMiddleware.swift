import Hummingbird
import Metrics
import Prometheus
import Synchronization

/// `onthemap_http_requests_total{status="2xx",door="router"}`: requests answered, by status class and by
/// the door they left by (`prepared`: before the router, `PreparedResponseHandler`; `router`); and
/// `onthemap_http_request_duration_seconds{route=…,status=…}`, how long each took, by route.
///
/// The counters are made once, and the timers once per route, so a request costs one atomic increment, a
/// lookup by its route under a lock of our own, and the histogram's update: cheaper than Hummingbird's own
/// metrics middleware, which looks its metrics up by name and labels on every request (a key joined from
/// the labels, a search of a shared table of every metric).
public final class RequestCounters: Sendable {
    public enum Door: String, CaseIterable, Sendable {
        case prepared
        case router
    }

    static let statusClasses = ["1xx", "2xx", "3xx", "4xx", "5xx"]
    /// Routes timed under their own name; any further one is timed as `other`. Routes are the router's
    /// patterns and the paths the door before it takes, never a raw path, so the bound is only a guard.
    static let routesTimed = OperatorMetrics.labelSetsPerMetric / statusClasses.count

    /// By door, then by status class.
    private let counters: [[Prometheus.Counter]]
    /// By route, then by status class: made under this lock, then found in `timed` without it.
    private let timersByRoute = Mutex<[String: [Metrics.Timer]]>([:])
    /// The routes timed so far and their timers, in a list that only grows, each entry published once: every
    /// answer finds its route's timers here, on every event loop at once, without waiting on the others for a
    /// lock.
    private let timed = PublishedOnce<TimedRoute>()
    private let factory: PrometheusMetricsFactory

    public init(registry: PrometheusCollectorRegistry) {
        counters = Door.allCases.map { door in
            Self.statusClasses.map { status in
                registry.makeCounter(
                    descriptor: MetricNameDescriptor(
                        namespace: "onthemap", metricName: "http_requests", unitName: "total",
                        helpText: "HTTP requests answered, by status class and by door (before the router or through it)."),
                    labels: [("status", status), ("door", door.rawValue)])
            }
        }
        factory = metricsFactory(registry)
    }

    /// One answer, from either door: counted, and timed under `route`, the route's pattern
    /// (`PUT /v1/StudentLocation/:objectId`), never the raw path.
    public func answered(route: String, status: HTTPResponse.Status, since start: ContinuousClock.Instant, door: Door) {
        let statusClass = min(max(status.code / 100, 1), 5) - 1
        counters[door == .prepared ? 0 : 1][statusClass].increment()
        timers(route)[statusClass].recordInterval(since: start)
    }

    private func timers(_ route: String) -> [Metrics.Timer] {
        if let found = listed(route).found { return found.timers }
        return timersByRoute.withLock { known in
            // Walked again under the lock, which every addition holds: what it finds last stays last.
            let walk = listed(route)
            if let found = walk.found { return found.timers }
            let timers = known[route] ?? made(route, known: &known)
            // The bound is the guard's, doubled: routes past it go on being found under the lock.
            if walk.count < 2 * Self.routesTimed {
                let entry = TimedRoute(route: route, timers: timers)
                _ = (walk.last?.next ?? timed).storeIfNil(entry)
            }
            return timers
        }
    }

    /// `route`'s entry in `timed`; else its last entry and how many there are.
    private func listed(_ route: String) -> (found: TimedRoute?, last: TimedRoute?, count: Int) {
        var (entry, last, count) = (timed.load(), TimedRoute?.none, 0)
        while let current = entry {
            // Lengths first, which a native string knows: most routes differ in theirs.
            if current.route.utf8.count == route.utf8.count, current.route == route { return (current, nil, count) }
            (last, count, entry) = (current, count + 1, current.next.load())
        }
        return (nil, last, count)
    }

    /// The timers of a route not timed yet: its own, or `other`'s past the bound.
    private func made(_ route: String, known: inout [String: [Metrics.Timer]]) -> [Metrics.Timer] {
        let name = known.count < Self.routesTimed ? route : "other"
        if let other = known[name] { return other }
        let made = Self.statusClasses.map { status in
            Metrics.Timer(
                label: OperatorMetrics.requestDuration, dimensions: [("route", name), ("status", status)],
                preferredDisplayUnit: .seconds, factory: factory)
        }
        known[name] = made
        return made
    }

    /// One entry of `timed`.
    private final class TimedRoute: Sendable {
        let route: String
        let timers: [Metrics.Timer]
        let next = PublishedOnce<TimedRoute>()

        init(route: String, timers: [Metrics.Timer]) {
            self.route = route
            self.timers = timers
        }
    }
}

/// Counts and times every response the router gives, by the matched route's pattern.
public struct RequestCountingMiddleware<Context: RequestContext>: RouterMiddleware {
    private let counters: RequestCounters

    public init(_ counters: RequestCounters) {
        self.counters = counters
    }

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let start = ContinuousClock.now
        let status: HTTPResponse.Status
        defer {
            counters.answered(route: context.route(of: request), status: status, since: start, door: .router)
        }
        do {
            let response = try await next(request, context)
            status = response.status
            return response
        } catch let error as any HTTPResponseError {
            status = error.status
            throw error
        } catch {
            status = .internalServerError
            throw error
        }
    }
}

extension RequestContext {
    /// The route a request the router took is known by in metrics, traces and access lines: its method and
    /// the matched pattern (`PUT /v1/StudentLocation/{objectId}`), never the raw path.
    public func route(of request: Request) -> String {
        "\(request.method) \(endpointPath ?? "NotFound")"
    }
}
