import HTTPTypes
import Prometheus
import TestSupport
import Testing

@testable import ServiceKit

/// What `/metrics` says of the answers: counted by door and status class, timed by route and status class.
struct RequestCountersTests {
    @Test func eachAnswerIsCountedByDoorAndTimedByRoute() {
        let registry = PrometheusCollectorRegistry()
        let counters = RequestCounters(registry: registry)
        counters.answered(route: "GET /v1/StudentLocation", status: .ok, since: .now, door: .prepared)
        counters.answered(route: "GET /v1/StudentLocation", status: .notModified, since: .now, door: .prepared)
        counters.answered(route: "GET /v1/StudentLocation", status: .ok, since: .now, door: .router)
        counters.answered(route: "PUT /v1/StudentLocation/{objectId}", status: .notFound, since: .now, door: .router)

        let samples = Self.samples(registry)
        #expect(samples[#"onthemap_http_requests_total{status="2xx",door="prepared"}"#] == 1)
        #expect(samples[#"onthemap_http_requests_total{status="3xx",door="prepared"}"#] == 1)
        #expect(samples[#"onthemap_http_requests_total{status="2xx",door="router"}"#] == 1)
        #expect(samples[#"onthemap_http_requests_total{status="4xx",door="router"}"#] == 1)
        let duration = "onthemap_http_request_duration_seconds_count"
        #expect(samples[#"\#(duration){route="GET /v1/StudentLocation",status="2xx"}"#] == 2, "both doors, one route")
        #expect(samples[#"\#(duration){route="GET /v1/StudentLocation",status="3xx"}"#] == 1)
        #expect(samples[#"\#(duration){route="PUT /v1/StudentLocation/{objectId}",status="4xx"}"#] == 1)
        #expect(samples[#"\#(duration){route="PUT /v1/StudentLocation/{objectId}",status="2xx"}"#] == 0)
    }

    @Test func routesPastTheBoundAreTimedAsOther() {
        let registry = PrometheusCollectorRegistry()
        let counters = RequestCounters(registry: registry)
        let routes = RequestCounters.routesTimed + 3
        for index in 0..<routes {
            counters.answered(route: "GET /route\(index)", status: .ok, since: .now, door: .router)
        }
        counters.answered(route: "GET /route0", status: .ok, since: .now, door: .router)

        let samples = Self.samples(registry)
        let duration = "onthemap_http_request_duration_seconds_count"
        #expect(samples[#"\#(duration){route="GET /route0",status="2xx"}"#] == 2)
        #expect(samples[#"\#(duration){route="GET /route\#(RequestCounters.routesTimed - 1)",status="2xx"}"#] == 1)
        #expect(samples[#"\#(duration){route="GET /route\#(RequestCounters.routesTimed)",status="2xx"}"#] == nil)
        #expect(samples[#"\#(duration){route="other",status="2xx"}"#] == 3)
        #expect(samples[#"onthemap_http_requests_total{status="2xx",door="router"}"#] == Double(routes + 1))
    }

    @Test func answersTimedFromManyThreadsAtOnceAreEachTimedUnderTheirRoute() async {
        let registry = PrometheusCollectorRegistry()
        let counters = RequestCounters(registry: registry)
        // Eight tasks at once, each answering the same 10 routes in its own order, every route's first answers
        // racing to list it.
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<8 {
                group.addTask {
                    for round in 0..<50 {
                        for index in 0..<10 {
                            let route = "GET /route\((index + task + round) % 10)"
                            counters.answered(route: route, status: .ok, since: .now, door: .prepared)
                        }
                    }
                }
            }
        }

        let samples = Self.samples(registry)
        let duration = "onthemap_http_request_duration_seconds_count"
        for index in 0..<10 {
            #expect(samples[#"\#(duration){route="GET /route\#(index)",status="2xx"}"#] == 400)
        }
        #expect(samples[#"onthemap_http_requests_total{status="2xx",door="prepared"}"#] == 4000)
    }

    /// The registry's samples, as `/metrics` would show them.
    static func samples(_ registry: PrometheusCollectorRegistry) -> [String: Double] {
        var buffer: [UInt8] = []
        registry.emit(into: &buffer)
        return metricSamples(String(decoding: buffer, as: UTF8.self))
    }
}
