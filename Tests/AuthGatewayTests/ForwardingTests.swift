import Foundation
import HTTPTypes
import HummingbirdTesting
import OnTheMapShared
import TestSupport
import Testing

@testable import AuthGateway

/// How the gateway talks to locations-service: request ids, outages, time limits.
@Suite struct ForwardingTests {
    @Test func aRequestIDIsKeptAndReachesTheServiceLog() async throws {
        try await withGateway { client, fixture in
            let student = try await client.signedUpAndLoggedIn("trace@example.com")
            let reply = try await client.send(
                .post, "/v1/StudentLocation",
                body: #"{"mapString":"Berlin","mediaURL":"https://a.example","latitude":52.5,"longitude":13.4}"#,
                headers: [student.bearer, HTTPField(name: .init("X-Request-ID")!, value: "trace-me-42")])
            #expect(reply.status == .ok)
            #expect(reply.headers[.init("X-Request-ID")!] == "trace-me-42")
            #expect(await fixture.locations.output(contains: "request_id=trace-me-42"))
            // Without one, each request gets its own, on the cached list as on a forwarded request.
            var made: Set<String> = []
            for uri in ["/v1/StudentLocation", "/v1/StudentLocation", "/v1/StudentLocation?limit=5"] {
                let id = try #require(try await client.send(.get, uri).headers[.init("X-Request-ID")!])
                #expect(RequestIDMiddleware.acceptable(id) == id)
                made.insert(id)
            }
            #expect(made.count == 3)
        }
    }

    @Test func aMadeRequestIDIsThisProcesssPrefixAndItsNumberInHexadecimal() throws {
        let first = RequestIDMiddleware.id(0)
        let prefix = try #require(first.split(separator: "-").first)
        #expect(prefix.count == 16 && prefix.allSatisfy { $0.isHexDigit && !$0.isUppercase })
        for (count, digits) in [(0, "0"), (15, "f"), (16, "10"), (0xdead_beef, "deadbeef"), (UInt64.max, "ffffffffffffffff")] as [(UInt64, String)] {
            #expect(RequestIDMiddleware.id(count) == "\(prefix)-\(digits)")
        }
        #expect(RequestIDMiddleware.make() != RequestIDMiddleware.make())
    }

    @Test func theCachedLatestListFollowsChangesMadeElsewhere() async throws {
        try await withGateway { client, fixture in
            let student = try await client.signedUpAndLoggedIn("cache@example.com")
            _ = try await client.postPin(as: student, mapString: "First")
            let warm = try await client.send(.get, "/v1/StudentLocation")
            let etag = try #require(warm.headers[.eTag])
            #expect(try await client.send(.get, "/v1/StudentLocation", headers: [HTTPField(name: .ifNoneMatch, value: etag)]).status == .notModified)

            // Another gateway replica's write reaches the service directly; this gateway learns of it
            // through its live feed.
            let (status, answer) = try await fixture.locations.request(
                "POST", "/v1/StudentLocation", body: #"{"mapString":"Elsewhere","mediaURL":"https://a.example","latitude":1,"longitude":2}"#,
                headers: [InternalHeaders.actor: student.actor.headerValue])
            #expect(status == 200)
            let id = try #require((try JSONSerialization.jsonObject(with: Data(answer.utf8)) as? [String: Any])?["objectId"] as? String)
            let seen = try await waitFor(within: .seconds(3), every: .milliseconds(10)) {
                try await client.send(.get, "/v1/StudentLocation").body.contains(id)
            }
            #expect(seen != nil, "the gateway kept serving a stale list")
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

extension TimedGatewayTests {
    @Test func locationsServiceDownGivesAQuickParseStyle503() async throws {
        try await withGateway { client, fixture in
            let student = try await client.signedUpAndLoggedIn("down@example.com")
            let port = try #require(client.port)
            let ready = try await ServiceProcess.healthCheck("auth-gateway", port: port)
            #expect(ready.status == 0 && ready.output == "auth-gateway on 127.0.0.1:\(port) is ready\n", "\(ready)")
            fixture.locations.terminate()
            _ = await fixture.locations.waitForExit(timeout: .seconds(10))
            for (method, body) in [
                (HTTPRequest.Method.get, nil as String?), (.post, #"{"mapString":"x","mediaURL":"https://a.example","latitude":1,"longitude":1}"#),
            ] {
                let started = ContinuousClock.now
                let reply = try await client.send(method, "/v1/StudentLocation", body: body, headers: [student.bearer])
                #expect(reply.status == .serviceUnavailable)
                #expect(reply.body == #"{"code":100,"error":"The locations service is unavailable; try again shortly."}"#)
                #expect(reply.headers[.retryAfter] == "1")
                #expect(ContinuousClock.now - started < .seconds(2))
            }
            #expect(try await client.send(.get, "/readyz").status == .serviceUnavailable)
            let down = try await ServiceProcess.healthCheck("auth-gateway", port: port)
            #expect(down.status == 1)
            #expect(
                down.output == "auth-gateway on 127.0.0.1:\(port) is not ready: HTTP/1.1 503 Service Unavailable "
                    + #"{"status":"unavailable","reason":"locations-service unreachable"}"# + "\n")
        }
    }
}
