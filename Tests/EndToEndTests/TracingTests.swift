import Foundation
import TestSupport
import Testing

/// One request followed across both services: with `OTEL_EXPORTER_OTLP_ENDPOINT` set, a pin posted through
/// the gateway is one trace at an OTLP/HTTP receiver (the OpenTelemetry protocol's own definitions decode
/// it), the gateway's spans and locations-service's joined by parent over the hop; and both services' JSON
/// access lines name that trace and the same request id.
@Suite struct TracingTests {
    struct Span: Decodable {
        let service: String
        let traceId: String
        let spanId: String
        let parentSpanId: String
        let name: String
        let kind: Int
        let attributes: [String: JSONValue]
    }

    enum JSONValue: Decodable, Equatable {
        case string(String)
        case number(Double)
        case bool(Bool)
        case other

        init(from decoder: any Decoder) throws {
            let value = try decoder.singleValueContainer()
            if let text = try? value.decode(String.self) {
                self = .string(text)
            } else if let flag = try? value.decode(Bool.self) {
                self = .bool(flag)
            } else if let number = try? value.decode(Double.self) {
                self = .number(number)
            } else {
                self = .other
            }
        }
    }

    static let (server, client, internalKind) = (2, 3, 1)

    @Test func aPostedPinIsOneTraceAcrossBothServicesAndTheirAccessLinesNameIt() async throws {
        let receiver = try OTLPReceiver()
        defer { receiver.stop() }
        let settings = [
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:\(receiver.port)", "OTEL_BSP_SCHEDULE_DELAY": "100", "LOG_FORMAT": "json",
        ]
        try await withSystem(gatewaySettings: settings, locationsSettings: settings) { gateway, locations in
            let http = CookielessClient(port: gateway.port)
            let account = #"{"email":"grace@example.com","password":"correct horse battery","firstName":"Grace","lastName":"Hopper"}"#
            #expect(try await http.send("POST", "/v1/accounts", body: account).status == 201)
            let login = try await http.send(
                "POST", "/v1/session", body: #"{"udacity":{"username":"grace@example.com","password":"correct horse battery"}}"#)
            let session = try #require(login.body.firstMatch(of: /"id":"([^"]+)"/)?.1)
            let bearer = ["Authorization": "Bearer \(session)", "X-Request-ID": "trace-test-post"]
            let pin = #"{"mapString":"Arlington","mediaURL":"https://navy.example","latitude":38.9,"longitude":-77.1}"#
            let posted = try await http.send("POST", "/v1/StudentLocation", body: pin, headers: bearer)
            #expect(posted.status == 200, "\(posted.body)")
            let objectId = try #require(posted.body.firstMatch(of: /"objectId":"([^"]+)"/)?.1)
            // Through the router's door: the history is not answered before it.
            #expect(
                try await http.send("GET", "/v1/StudentLocation/\(objectId)/history", headers: ["X-Request-ID": "trace-test-history"]).status == 200)

            var spans: [Span] = []
            let deadline = ContinuousClock.now + .seconds(20)
            func post(_ spans: [Span]) -> Span? {
                spans.first { $0.service == "auth-gateway" && $0.kind == Self.server && $0.name == "POST /v1/StudentLocation" }
            }
            while ContinuousClock.now < deadline {
                spans = receiver.spans()
                if let request = post(spans),
                    spans.contains(where: { $0.traceId == request.traceId && $0.service == "locations-service" && $0.name == "group commit" }),
                    spans.contains(where: { $0.service == "locations-service" && $0.name.contains("history") }),
                    // The gateway's span of the read ends after the service's, and may be exported in a later batch.
                    spans.contains(where: { $0.service == "auth-gateway" && $0.kind == Self.server && $0.name.contains("history") })
                {
                    break
                }
                try await Task.sleep(for: .milliseconds(100))
            }
            let request = try #require(post(spans), "the gateway's span of the post: \(spans.map(\.name))")
            let trace = spans.filter { $0.traceId == request.traceId }
            func child(of parent: Span, _ service: String, _ matches: (Span) -> Bool) -> Span? {
                trace.first { $0.parentSpanId == parent.spanId && $0.service == service && matches($0) }
            }
            #expect(request.parentSpanId.isEmpty, "a public client's request starts its own trace")
            #expect(request.attributes["http.response.status_code"] == .number(200))
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
        }
    }
}

/// `Tests/tracing/otlp_receiver.py` on a free port, writing what it receives to a file of its own.
struct OTLPReceiver {
    let port = freePort()
    let file = FileManager.default.temporaryDirectory.appendingPathComponent("otlp-\(UUID().uuidString).jsonl")
    let process = Process()

    init() throws {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("tracing/otlp_receiver.py")
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", script.path, "--port", String(port), "--out", file.path]
        try process.run()
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
