import Foundation
import TestSupport
import Testing

/// One request followed across both services: with `OTEL_EXPORTER_OTLP_ENDPOINT` set, a pin posted through
/// the gateway is one trace at an OTLP/HTTP receiver (the OpenTelemetry protocol's own definitions decode
/// it), the gateway's spans and locations-service's joined by parent over the hop; and both services' JSON
/// access lines name that trace and the same request id.
@Suite struct TracingTests {
    /// A span as the receiver writes it: what the span holds, its resource and scope, and the export that
    /// brought it (which try, with which headers).
    struct Span: Decodable {
        let service: String
        let traceId: String
        let spanId: String
        let parentSpanId: String
        let name: String
        let kind: Int
        let attributes: [String: JSONValue]
        let links: [String]
        let status: Int
        let statusMessage: String
        let traceState: String
        let start: UInt64
        let end: UInt64
        let events: [Event]
        let resource: [String: JSONValue]
        let scope: String
        let export: Export

        struct Event: Decodable {
            let name: String
            let attributes: [String: JSONValue]
        }

        struct Export: Decodable {
            let number: Int
            let headers: [String: String]
        }
    }

    enum JSONValue: Decodable, Equatable {
        case string(String)
        case number(Double)
        case bool(Bool)
        case array([JSONValue])
        /// None of those (a value the receiver could not name).
        case other

        init(from decoder: any Decoder) throws {
            let value = try decoder.singleValueContainer()
            if let flag = try? value.decode(Bool.self) {
                self = .bool(flag)
            } else if let number = try? value.decode(Double.self) {
                self = .number(number)
            } else if let items = try? value.decode([JSONValue].self) {
                self = .array(items)
            } else if let text = try? value.decode(String.self) {
                self = .string(text)
            } else {
                self = .other
            }
        }
    }

    static let (server, client, internalKind) = (2, 3, 1)

    @Test(Needs.openTelemetryProto) func aPostedPinIsOneTraceAcrossBothServicesAndTheirAccessLinesNameIt() async throws {
        let receiver = try OTLPReceiver()
        defer { receiver.stop() }
        let settings = receiver.settings(["LOG_FORMAT": "json", "TRACE_SAMPLE_RATIO": "1"])
        try await withSystem(gatewaySettings: settings, locationsSettings: settings) { gateway, locations in
            let http = CookielessClient(port: gateway.port)
            let session = try await http.newStudentSession(email: "grace@example.com", firstName: "Grace", lastName: "Hopper")
            let bearer = ["Authorization": "Bearer \(session)", "X-Request-ID": "trace-test-post"]
            let pin = #"{"mapString":"Arlington","mediaURL":"https://navy.example","latitude":38.9,"longitude":-77.1}"#
            let posted = try await http.send("POST", "/v1/StudentLocation", body: pin, headers: bearer)
            #expect(posted.status == 200, "\(posted.body)")
            let objectId = try #require(posted.body.firstMatch(of: /"objectId":"([^"]+)"/)?.1)
            // The session is in the gateway's memory now: a second post finds it there.
            let moved = #"{"mapString":"Washington","mediaURL":"https://navy.example","latitude":38.9,"longitude":-77.0}"#
            let again = ["Authorization": "Bearer \(session)", "X-Request-ID": "trace-test-cached"]
            #expect(try await http.send("POST", "/v1/StudentLocation", body: moved, headers: again).status == 200)
            // Through the router's door: the history is not answered before it.
            #expect(
                try await http.send("GET", "/v1/StudentLocation/\(objectId)/history", headers: ["X-Request-ID": "trace-test-history"]).status == 200)

            // Stopped, each service exports what it holds before it exits: then the receiver has every span.
            for process in [gateway, locations] {
                process.terminate()
                #expect(await process.waitForExit(timeout: .seconds(20)) == 0)
            }
            let spans = receiver.spans()
            func post(_ spans: [Span]) -> Span? {
                spans.first { $0.service == "auth-gateway" && $0.kind == Self.server && $0.name == "POST /v1/StudentLocation" }
            }
            let request = try #require(post(spans), "the gateway's span of the post: \(spans.map(\.name))")
            let trace = spans.filter { $0.traceId == request.traceId }
            func child(of parent: Span, _ service: String, _ matches: (Span) -> Bool) -> Span? {
                trace.first { $0.parentSpanId == parent.spanId && $0.service == service && matches($0) }
            }
            #expect(request.parentSpanId.isEmpty, "a public client's request starts its own trace")
            #expect(request.attributes["http.response.status_code"] == .number(200))
            // Its session was not yet in the gateway's memory: the lookup went to PostgreSQL.
            #expect(child(of: request, "auth-gateway") { $0.name == "session lookup" } != nil, "\(trace.map(\.name))")
            let hop = try #require(child(of: request, "auth-gateway") { $0.kind == Self.client && $0.name == "locations-service POST" })
            #expect(hop.attributes["url.path"] == .string("/v1/StudentLocation"))
            let served = try #require(child(of: hop, "locations-service") { $0.kind == Self.server }, "\(trace.map(\.name))")
            #expect(served.name == "POST /v1/StudentLocation")
            let commit = try #require(child(of: served, "locations-service") { $0.name == "group commit" }, "\(trace.map(\.name))")
            let statement = try #require(child(of: commit, "locations-service") { $0.attributes["db.system.name"] == .string("postgresql") })
            #expect(statement.name.hasPrefix("WITH") || statement.name.hasPrefix("INSERT"), "\(statement.name)")
            if case .string(let text) = statement.attributes["db.query.text"] {
                #expect(!text.contains("Arlington") && !text.contains("navy.example"), "a statement's values are not in its span")
            } else {
                Issue.record("the statement's text is on its span")
            }

            let history = try #require(spans.first { $0.service == "auth-gateway" && $0.kind == Self.server && $0.name.contains("history") })
            let historyHop = try #require(spans.first { $0.parentSpanId == history.spanId && $0.kind == Self.client })
            #expect(spans.contains { $0.parentSpanId == historyHop.spanId && $0.service == "locations-service" })

            for (name, output) in [("auth-gateway", gateway.output), ("locations-service", locations.output)] {
                let lines = output.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: String] }
                let access = lines.filter { $0["message"] == "request" && $0["trace_id"] == request.traceId }
                #expect(access.count == 1, "\(name) wrote one access line for the post's trace: \(access)")
                #expect(access.first?["request_id"] == "trace-test-post")
                #expect(access.first?["route"] == "POST /v1/StudentLocation")
                #expect(access.first?["status"] == "200")
                #expect(access.first.map { $0["duration_ms"] != nil && $0["client"] != nil && $0["time"] != nil } == true)
            }

            // The second post's trace has its request and its hop, but no span for a session answered from
            // memory.
            let lines = gateway.output.split(separator: "\n").compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: String]
            }
            let cachedTrace = try #require(lines.first { $0["message"] == "request" && $0["request_id"] == "trace-test-cached" }?["trace_id"])
            let names = spans.filter { $0.traceId == cachedTrace }.map { "\($0.service) \($0.name)" }
            #expect(names.contains("auth-gateway POST /v1/StudentLocation") && names.contains("auth-gateway locations-service POST"), "\(names)")
            #expect(!names.contains("auth-gateway session lookup"), "\(names)")
        }
    }
}

extension TracingTests {
    /// A student's session, and a pin posted with it, through the gateway at `port`.
    static func postAPin(_ http: CookielessClient, as email: String) async throws -> (status: Int, session: String) {
        let session = try await http.newStudentSession(email: email, firstName: "Mary", lastName: "Jackson")
        let pin = #"{"mapString":"Hampton","mediaURL":"https://nasa.example","latitude":37.0,"longitude":-76.3}"#
        let posted = try await http.send("POST", "/v1/StudentLocation", body: pin, headers: ["Authorization": "Bearer \(session)"])
        return (posted.status, session)
    }

    @Test(Needs.openTelemetryProto) func withNoShareKeptOnlyAFailureIsExportedAndAsItsRequestsSpanAlone() async throws {
        let receiver = try OTLPReceiver()
        defer { receiver.stop() }
        let settings = receiver.settings(["TRACE_SAMPLE_RATIO": "0", "TRACE_SLOW_MS": "60000"])
        try await withSystem(gatewaySettings: settings, locationsSettings: settings) { gateway, locations in
            let http = CookielessClient(port: gateway.port)
            let (status, session) = try await Self.postAPin(http, as: "mary@example.com")
            #expect(status == 200)
            #expect(try await http.send("GET", "/v1/StudentLocation?order=mapString").status == 200)
            // The service gone, the next post fails at the gateway: that request, and only it, is exported. Gone
            // means exited: a service told to stop still answers a request that reaches it before it has begun
            // to stop (on a busy machine, this post did).
            locations.terminate()
            #expect(await locations.waitForExit(timeout: .seconds(20)) == 0)
            let pin = #"{"mapString":"Hampton","mediaURL":"https://nasa.example","latitude":37.0,"longitude":-76.3}"#
            let failed = try await http.send("POST", "/v1/StudentLocation", body: pin, headers: ["Authorization": "Bearer \(session)"])
            #expect(failed.status >= 500, "\(failed.status) \(failed.body)")
            // Stopped, the gateway exports what it holds before it exits: then the receiver has everything.
            gateway.terminate()
            #expect(await gateway.waitForExit(timeout: .seconds(20)) == 0)
            let spans = receiver.spans()
            #expect(spans.count == 1, "\(spans.map { "\($0.service) \($0.name)" })")
            let span = try #require(spans.first)
            #expect(span.service == "auth-gateway" && span.name == "POST /v1/StudentLocation" && span.kind == Self.server)
            #expect(span.parentSpanId.isEmpty)
            #expect(span.attributes["onthemap.trace.kept"] == .string("failed"))
            #expect(span.attributes["http.response.status_code"] == .number(Double(failed.status)))
        }
    }

    @Test(Needs.openTelemetryProto) func aSlowRequestNotKeptIsExportedAloneWithNoneOfItsWork() async throws {
        let receiver = try OTLPReceiver()
        defer { receiver.stop() }
        let settings = receiver.settings(["TRACE_SAMPLE_RATIO": "0", "TRACE_SLOW_MS": "0"])
        try await withSystem(gatewaySettings: settings, locationsSettings: settings) { gateway, locations async throws in
            let http = CookielessClient(port: gateway.port)
            #expect(try await Self.postAPin(http, as: "dorothy@example.com").status == 200)
            // Stopped, both services export what they hold before they exit.
            for process in [gateway, locations] {
                process.terminate()
                #expect(await process.waitForExit(timeout: .seconds(20)) == 0)
            }
            let spans = receiver.spans()
            #expect(spans.contains { $0.service == "auth-gateway" && $0.name == "POST /v1/StudentLocation" }, "\(spans.map(\.name))")
            // Every request took at least 0 ms: each is a span of its own, with no children. The service took the
            // gateway's requests as not kept by it (and was not slow by its own decision): of the service, only
            // what was asked of it directly is there (the harness's readiness checks).
            let names = spans.map { "\($0.service) \($0.name)" }
            #expect(!spans.isEmpty && spans.allSatisfy { $0.kind == Self.server && $0.parentSpanId.isEmpty }, "\(names)")
            #expect(!spans.contains { $0.service == "locations-service" && $0.name.contains("StudentLocation") }, "\(names)")
            #expect(spans.allSatisfy { $0.attributes["onthemap.trace.kept"] == .string("slow") })
            #expect(Set(spans.map(\.traceId)).count == spans.count, "one trace per request")
        }
    }
}

/// `Tests/tracing/otlp_receiver.py` on a free port, writing what it receives to a file of its own; the first
/// `busy` exports are answered 503.
struct OTLPReceiver {
    let port = freePort()
    let file = FileManager.default.temporaryDirectory.appendingPathComponent("otlp-\(UUID().uuidString).jsonl")
    let process = Process()

    init(busy: Int = 0) throws {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("tracing/otlp_receiver.py")
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", script.path, "--port", String(port), "--out", file.path, "--busy", String(busy)]
        try process.run()
    }

    /// A service's settings that export its spans here, a batch every 100 ms, with `more` beside them.
    func settings(_ more: [String: String]) -> [String: String] {
        ["OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:\(port)", "OTEL_BSP_SCHEDULE_DELAY": "100"].merging(more) { $1 }
    }

    func spans() -> [TracingTests.Span] {
        let text = (try? String(contentsOf: file, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { try? JSONDecoder().decode(TracingTests.Span.self, from: Data($0.utf8)) }
    }

    /// SIGKILL: a child of the test process starts with the signals its spawning thread blocks, SIGTERM among them.
    func stop() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: file)
    }
}
