import Foundation
import HTTPTypes
import HummingbirdTesting
import OnTheMapShared
import Testing
import TestSupport
@testable import AuthGateway

/// How the gateway talks to locations-service: request ids, outages, time limits.
@Suite struct ForwardingTests {
    @Test func aRequestIDIsKeptAndReachesTheServiceLog() async throws {
        try await withGateway { client, fixture in
            let student = try await client.signedUpAndLoggedIn("trace@example.com")
            let reply = try await client.send(.post, "/v1/StudentLocation",
                                              body: #"{"mapString":"Berlin","mediaURL":"https://a.example","latitude":52.5,"longitude":13.4}"#,
                                              headers: [student.bearer, HTTPField(name: .init("X-Request-ID")!, value: "trace-me-42")])
            #expect(reply.status == .ok)
            #expect(reply.headers[.init("X-Request-ID")!] == "trace-me-42")
            try await Task.sleep(for: .milliseconds(200))
            #expect(fixture.locations.output.contains("request_id=trace-me-42"))
            let made = try await client.send(.get, "/v1/StudentLocation")
            #expect(made.headers[.init("X-Request-ID")!]?.count == 36)
        }
    }

    @Test func locationsServiceDownGivesAQuickParseStyle503() async throws {
        try await withGateway { client, fixture in
            let student = try await client.signedUpAndLoggedIn("down@example.com")
            fixture.locations.terminate()
            _ = await fixture.locations.waitForExit(timeout: .seconds(10))
            for (method, body) in [(HTTPRequest.Method.get, nil as String?), (.post, #"{"mapString":"x","mediaURL":"https://a.example","latitude":1,"longitude":1}"#)] {
                let started = ContinuousClock.now
                let reply = try await client.send(method, "/v1/StudentLocation", body: body, headers: [student.bearer])
                #expect(reply.status == .serviceUnavailable)
                #expect(reply.body == #"{"code":100,"error":"The locations service is unavailable; try again shortly."}"#)
                #expect(ContinuousClock.now - started < .seconds(2))
            }
            #expect(try await client.send(.get, "/readyz").status == .serviceUnavailable)
        }
    }

    @Test func healthAndReadiness() async throws {
        try await withGateway { client, _ in
            let health = try await client.send(.get, "/healthz")
            let ready = try await client.send(.get, "/readyz")
            let metrics = try await client.send(.get, "/metrics")
            let openAPI = try await client.send(.get, "/openapi.yaml")
            #expect(openAPI.status == .ok)
            #expect(openAPI.headers[.contentType]?.hasPrefix("application/yaml") == true)
            #expect(openAPI.body.hasPrefix("openapi: 3.0.3"))
            #expect(health.body == #"{"status":"ok"}"#)
            #expect(ready.body == #"{"status":"ready"}"#)
            #expect(metrics.status == .ok)
        }
    }
}
