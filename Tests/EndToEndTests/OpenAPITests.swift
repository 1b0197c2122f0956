import Foundation
import TestSupport
import Testing

/// The real binaries, the gateway in front of locations-service, checked against the published OpenAPI
/// document by the tools API users would use: openapi-spec-validator and schemathesis.
@Suite(.serialized) struct OpenAPITests {
    /// Runs a command, returning its exit status and everything it printed.
    static func run(_ arguments: [String], timeout: Duration = .seconds(600)) async throws -> (Int32, String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("e2e-\(UUID().uuidString).log")
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        let handle = try FileHandle(forWritingTo: output)
        process.standardOutput = handle
        process.standardError = handle
        let exit = try ProcessExit(running: process)
        if await exit.status(within: timeout) == nil { process.terminate() }
        process.waitUntilExit()
        let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
        try? FileManager.default.removeItem(at: output)
        return (process.terminationStatus, text)
    }

    @Test(Needs.openAPIValidator) func theServedDocumentIsValidOpenAPI() async throws {
        try await withSystem { gateway, _ in
            let (status, document) = try await gateway.get("/openapi.yaml", token: false)
            #expect(status == 200)
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("openapi-\(UUID().uuidString).yaml")
            try document.write(to: file, atomically: true, encoding: .utf8)
            defer { try? FileManager.default.removeItem(at: file) }
            let (exit, output) = try await Self.run(["python3", "-m", "openapi_spec_validator", file.path])
            #expect(exit == 0, "\(output)")
        }
    }

    /// Generated requests against every operation, at least 4,000 of them from a fixed seed: no 5xx anywhere,
    /// and every answer matches the document (status, headers, content type, schema), every input the
    /// document allows is accepted and every one it forbids refused, and writes without a session are
    /// refused. Two runs: the pin routes with a real session, so writes are authorised and the links
    /// (post → get, put, delete on every path family) reach real pins; then every route with none, so the
    /// session routes are fuzzed too and sign-up → login → write links supply their own sessions. One
    /// session makes thousands of writes here, so the write limit is raised (its 429 is in the document, and
    /// `WriteLimitTests` hold it), and so is the cap on one student's pins: past it a post takes the oldest
    /// pin off the map, which a link from a post to its GET would read as a created pin not found
    /// (`PinCapTests` hold the cap).
    @Test(Needs.schemathesis) func schemathesisFindsNoServerErrorAndNoAnswerThatBreaksTheDocument() async throws {
        try await withSystem(gatewaySettings: ["WRITE_BURST": "1000000"], locationsSettings: ["PINS_PER_STUDENT": "1000000"]) { gateway, _ in
            let session = try await Self.logIn(gateway)
            let reports = FileManager.default.temporaryDirectory.appendingPathComponent("schemathesis-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: reports) }
            let started = ContinuousClock.now

            // The two runs go side by side: the one without a session cannot end the other's (it knows no
            // session id), and each is one Python process, so together they keep both cores busy.
            async let withSession = Self.schemathesis(
                gateway, report: reports.appendingPathComponent("writes.har"),
                [
                    "-H", "Authorization: Bearer \(session)",
                    // Their login would start other sessions, and their logout or erasure end this one (the
                    // session routes under a class map's base URL are the same routes).
                    "--exclude-path-regex", "^(/maps/[^/]+)?/(v1|api)/(session|users)|^/v1/accounts|/events$",
                ])
            // Every route but the endless event stream.
            async let withoutSession = Self.schemathesis(
                gateway, report: reports.appendingPathComponent("all.har"),
                [
                    "--exclude-path", "/v1/StudentLocation/events",
                ])
            let (exitWrites, outputWrites) = try await withSession
            #expect(exitWrites == 0, "\(outputWrites.suffix(8000))")
            let (exitAll, outputAll) = try await withoutSession
            #expect(exitAll == 0, "\(outputAll.suffix(8000))")

            let writes = try Self.requests(in: reports.appendingPathComponent("writes.har"))
            let all = try Self.requests(in: reports.appendingPathComponent("all.har"))
            let requests = writes + all
            let pinWrites = requests.filter { $0.method != "GET" && $0.url.contains("StudentLocation") }
            let authorised = pinWrites.filter { $0.status != 401 }
            print(
                "schemathesis: \(requests.count) requests (\(writes.count) with a session, \(all.count) without) in "
                    + "\(ContinuousClock.now - started); \(authorised.count) of \(pinWrites.count) pin writes authorised, "
                    + "\(pinWrites.filter { (200..<300).contains($0.status) }.count) done")
            #expect(requests.count >= 4000)
            #expect(authorised.count * 3 >= pinWrites.count)
            #expect(!requests.contains { $0.status >= 500 })
        }
    }

    /// Signs up and logs in through the gateway; the session id.
    static func logIn(_ gateway: ServiceProcess) async throws -> String {
        let account = #"{"email":"schemathesis@example.com","password":"correct horse battery","firstName":"Fuzz","lastName":"Tester"}"#
        let (created, _) = try await gateway.request("POST", "/v1/accounts", body: account, token: false)
        #expect(created == 201)
        let login = #"{"udacity":{"username":"schemathesis@example.com","password":"correct horse battery"}}"#
        let (status, body) = try await gateway.request("POST", "/v1/session", body: login, token: false)
        #expect(status == 200)
        let answer = try JSONSerialization.jsonObject(with: Data(body.utf8.dropFirst(5))) as? [String: Any]
        guard let id = (answer?["session"] as? [String: Any])?["id"] as? String else { throw HarnessError("no session in \(body)") }
        return id
    }

    /// One schemathesis run over the served document with every check, recording its requests in a HAR file.
    /// The hooks read the session and users answers after their `)]}'` prefix; the configuration says which
    /// refusals depend on state rather than input.
    static func schemathesis(_ gateway: ServiceProcess, report: URL, _ arguments: [String]) async throws -> (Int32, String) {
        let here = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        let base = "http://127.0.0.1:\(gateway.port)"
        return try await run(
            [
                "SCHEMATHESIS_HOOKS=" + here.appendingPathComponent("schemathesis_hooks.py").path,
                "python3", "-m", "schemathesis.cli", "--config-file", here.appendingPathComponent("schemathesis.toml").path,
                "run", base + "/openapi.yaml", "--url", base, "--checks", "all",
                "--max-examples", "65", "--seed", "20261122", "--generation-database", "none", "--request-timeout", "10",
                // PostgreSQL text cannot hold NUL; such input is refused with a 400, which is right but
                // would read as "valid input rejected" to the fuzzer.
                "--generation-allow-x00", "false",
                "--report", "har", "--report-har-path", report.path, "--no-color",
            ] + arguments, timeout: .seconds(300))
    }

    /// The method, URL and answer status of every request in a HAR file.
    static func requests(in har: URL) throws -> [(method: String, url: String, status: Int)] {
        let document = try JSONSerialization.jsonObject(with: Data(contentsOf: har)) as? [String: Any]
        let entries = (document?["log"] as? [String: Any])?["entries"] as? [[String: Any]] ?? []
        return entries.map { entry in
            let request = entry["request"] as? [String: Any]
            return (
                request?["method"] as? String ?? "", request?["url"] as? String ?? "",
                (entry["response"] as? [String: Any])?["status"] as? Int ?? 0
            )
        }
    }
}
