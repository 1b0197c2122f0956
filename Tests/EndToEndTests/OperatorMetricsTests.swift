import Foundation
import TestSupport
import Testing

/// `/metrics` as an operator reads it from the real binaries: what was asked, how long it took, what was
/// refused and why, the connections, the database and the calls between services, and where the log stands.
@Suite struct OperatorMetricsTests {
    @Test func anOperatorSeesRequestsByRouteRefusalsByReasonConnectionsQueriesCallsAndTheLogsHead() async throws {
        try await withSystem(gatewaySettings: ["WRITE_BURST": "1"]) { gateway, locations in

            // First, while this process's URL session holds no session cookie yet.
            #expect(try await gateway.request("POST", "/v1/StudentLocation", body: TestPin.json, token: false).0 == 401)
            let signUp = try await gateway.request(
                "POST", "/v1/accounts", body: #"{"email":"ops@example.com","password":"correct horse","firstName":"Op","lastName":"Erator"}"#,
                token: false)
            #expect(signUp.0 == 201, "\(signUp)")
            let login = try await gateway.request(
                "POST", "/v1/session", body: #"{"udacity":{"username":"ops@example.com","password":"correct horse"}}"#, token: false)
            let session = try #require(
                ((try JSONSerialization.jsonObject(with: Data(login.1.utf8.dropFirst(5))) as? [String: Any])?["session"] as? [String: Any])?["id"]
                    as? String)
            #expect(
                try await gateway.request(
                    "POST", "/v1/StudentLocation", body: TestPin.json, headers: ["Authorization": "Bearer \(session)"], token: false
                ).0
                    == 200)
            let flood = try await gateway.request(
                "POST", "/v1/StudentLocation", body: TestPin.json, headers: ["Authorization": "Bearer \(session)"], token: false)
            #expect(flood.0 == 429, "a second post at once, past WRITE_BURST=1: \(flood)")
            #expect(try await gateway.get("/v1/StudentLocation", token: false).0 == 200)

            let (status, text) = try await gateway.get("/metrics", token: false)
            #expect(status == 200)
            let seen = metricSamples(text)
            let duration = "onthemap_http_request_duration_seconds_count"
            #expect(seen[#"\#(duration){route="POST /v1/accounts",status="2xx"}"#] == 1, "\(text)")
            #expect(seen[#"\#(duration){route="POST /v1/StudentLocation",status="2xx"}"#] == 1, "the door before the router is timed too")
            #expect(seen[#"\#(duration){route="POST /v1/StudentLocation",status="4xx"}"#] == 2)
            #expect(seen[#"onthemap_refusals_total{reason="notLoggedIn"}"#] == 1)
            #expect(seen[#"onthemap_refusals_total{reason="rateLimited"}"#] == 1)
            #expect((seen["onthemap_open_connections"] ?? 0) >= 1)
            #expect((seen["onthemap_db_query_duration_seconds_count"] ?? 0) >= 3, "sign-up, login and the session lookup")
            #expect((seen[#"onthemap_outbound_requests_total{target="locations-service",result="ok"}"#] ?? 0) >= 1)
            // Every result of a called service is listed from its first call, at 0 until one happens.
            for result in ["unavailable", "timeout", "error"] {
                #expect(seen[#"onthemap_outbound_requests_total{target="locations-service",result="\#(result)"}"#] == 0, "\(result)")
            }
            #expect(seen["onthemap_live_streams"] == 0)
            try expectProcessFigures(seen, of: gateway)

            #expect(try await locations.get("/metrics", token: false).0 == 401, "the service's figures need its token")
            let service = metricSamples(try await locations.get("/metrics").1)
            #expect(service["onthemap_event_log_head_position"] == 1)
            // Up to the head once no older transaction anywhere on the (shared) cluster is open.
            #expect(service["onthemap_event_log_followed_position"].map { (0...1).contains($0) } == true)
            #expect(service["onthemap_read_model_pins"] == 1)
            #expect(service["onthemap_replay_checkpoint_position"] == 0)
            try expectProcessFigures(service, of: locations)
        }
    }

    /// The process's resident memory and descriptors on `/metrics` are the ones the kernel shows for it.
    func expectProcessFigures(_ samples: [String: Double], of service: ServiceProcess) throws {
        let proc = "/proc/\(service.process.processIdentifier)"
        let pages = try #require(Double(try String(contentsOfFile: "\(proc)/statm", encoding: .utf8).split(separator: " ")[1]))
        let resident = pages * Double(sysconf(Int32(_SC_PAGESIZE)))
        let reported = try #require(samples["process_resident_memory_bytes"])
        #expect(abs(reported - resident) < resident / 4, "\(reported) bytes reported, the kernel shows \(resident)")
        let descriptors = Double(try FileManager.default.contentsOfDirectory(atPath: "\(proc)/fd").count)
        let open = try #require(samples["process_open_fds"])
        #expect(abs(open - descriptors) <= 4, "\(open) descriptors reported, the kernel shows \(descriptors)")
    }
}
