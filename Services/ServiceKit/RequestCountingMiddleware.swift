import Hummingbird
import Prometheus

/// `onthemap_http_requests_total{status="2xx",door="router"}`: requests answered, by status class and by
/// the door they left by (`prepared`: before the router, `PreparedResponseHandler`; `router`).
///
/// The counters are made once, so a request costs one atomic increment: Hummingbird's own metrics
/// middleware looks its metrics up by name and labels on every request, which showed as a large share of
/// the hot read's cost.
public final class RequestCounters: Sendable {
    public enum Door: String, CaseIterable, Sendable {
        case prepared
        case router
    }

    /// By door, then by status class.
    private let counters: [[Counter]]

    public init(registry: PrometheusCollectorRegistry) {
        counters = Door.allCases.map { door in
            ["1xx", "2xx", "3xx", "4xx", "5xx"].map { status in
                registry.makeCounter(
                    descriptor: MetricNameDescriptor(
                        namespace: "onthemap", metricName: "http_requests", unitName: "total",
                        helpText: "HTTP requests answered, by status class and by door (before the router or through it)."),
                    labels: [("status", status), ("door", door.rawValue)])
            }
        }
    }

    /// One answer, from either door: counted, and timed by route (`OperatorMetrics.answered`).
    public func answered(route: String, status: HTTPResponse.Status, since start: ContinuousClock.Instant, door: Door) {
        counters[door == .prepared ? 0 : 1][min(max(status.code / 100, 1), 5) - 1].increment()
        OperatorMetrics.answered(route: route, status: status, since: start)
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
            counters.answered(route: "\(request.method) \(context.endpointPath ?? "NotFound")", status: status, since: start, door: .router)
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
