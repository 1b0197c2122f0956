import HTTPTypes
import HummingbirdTesting
import TestSupport
import Testing

@testable import LocationsService

@Suite struct HealthTests {
    @Test func healthzAndReadyzAnswerWithoutTheInternalToken() async throws {
        try await withLiveService { client, _ in
            let health = try await client.send(.get, "/healthz", token: false)
            #expect(health.status == .ok)
            #expect(health.body == #"{"status":"ok"}"#)
            let ready = try await client.send(.get, "/readyz", token: false)
            #expect(ready.status == .ok)
            #expect(ready.body == #"{"status":"ready"}"#)
        }
    }

    @Test func metricsCountAppendedEvents() async throws {
        try await withLiveService { client, _ in
            _ = try await client.post(as: TestActors.jarrod)
            _ = try await client.post(as: TestActors.amara)
            let metrics = try await client.send(.get, "/metrics")
            #expect(metrics.status == .ok)
            #expect(metrics.headers[.contentType]?.hasPrefix("text/plain") == true)
            #expect(metrics.body.contains("onthemap_events_appended_total 2"))
            #expect(metrics.body.contains(#"onthemap_http_requests_total{status="2xx",door="router"} 2"#), "\(metrics.body)")
        }
    }

    @Test func unknownRoutesAnswerInParseShape() async throws {
        try await withLiveService { client, _ in
            let reply = try await client.send(.get, "/v1/Nothing")
            #expect(reply.status == .notFound)
            #expect(reply.json["code"] as? Int == 101)
        }
    }
}
