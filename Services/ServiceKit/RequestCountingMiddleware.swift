import Hummingbird
import Prometheus

/// `onthemap_http_requests_total{status="2xx"}`: requests answered, by status class.
///
/// The counters are made once, so a request costs one atomic increment: Hummingbird's own metrics
/// middleware looks its metrics up by name and labels on every request, which showed as a large share of
/// the hot read's cost.
public final class RequestCounters: Sendable {
    private let counters: [Counter]

    public init(registry: PrometheusCollectorRegistry) {
        counters = ["1xx", "2xx", "3xx", "4xx", "5xx"].map { status in
            registry.makeCounter(
                descriptor: MetricNameDescriptor(
                    namespace: "onthemap", metricName: "http_requests", unitName: "total",
                    helpText: "HTTP requests answered, by status class."),
                labels: [("status", status)])
        }
    }

    public func count(_ status: HTTPResponse.Status) {
        counters[min(max(status.code / 100, 1), 5) - 1].increment()
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
            counters.count(status)
            OperatorMetrics.answered(route: "\(request.method) \(context.endpointPath ?? "NotFound")", status: status, since: start)
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
