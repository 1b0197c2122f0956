import Foundation
import TestSupport

/// `Tests/oidc/provider.py`, a real OpenID Connect provider (django-oidc-provider), on a free loopback port
/// with one student, Alice; and `Tests/oidc/browse.py`, a scripted browser that signs in there.
final class SignInProvider: Sendable {
    static let clientID = "on-the-map"
    static let clientSecret = "test-client-secret-4f1d9c2b7a"
    static let username = "alice"
    static let password = "wonderland-9"
    static let email = "alice@school.example"

    let directory: URL
    let process: Process
    let port: Int
    var issuer: String { "http://127.0.0.1:\(port)/openid" }

    private static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("oidc")

    /// The interpreter itself, not a launcher script that would keep its own process id and not pass on a signal.
    static let python: String = {
        let which = Process()
        which.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        which.arguments = ["python3", "-c", "import sys; print(sys.executable)"]
        let pipe = Pipe()
        which.standardOutput = pipe
        try? which.run()
        which.waitUntilExit()
        return String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }()

    /// The provider, sending students back to `gateway`'s callback only.
    init(gateway: String) async throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("oidc-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let portFile = directory.appendingPathComponent("port")
        let process = Process()
        self.process = process
        process.executableURL = URL(fileURLWithPath: Self.python)
        process.arguments = [
            Self.folder.appendingPathComponent("provider.py").path, "serve", "--dir", directory.path, "--port-file", portFile.path,
            "--client-id", Self.clientID, "--client-secret", Self.clientSecret, "--redirect-uri", gateway + "/v1/auth/oidc/callback",
            "--user", "\(Self.username):\(Self.password):Alice:Liddell:\(Self.email)",
        ]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        var found: Int?
        _ = try await waitFor(within: .seconds(60), every: .milliseconds(50)) {
            found = (try? String(contentsOf: portFile, encoding: .utf8)).flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
            return found != nil || !process.isRunning
        }
        guard let found else {
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            try? FileManager.default.removeItem(at: directory)
            throw HarnessError("the OpenID Connect provider did not start")
        }
        port = found
    }

    /// SIGKILL: a child of the test process starts with the signals its spawning thread blocks, SIGTERM among them.
    func stop() {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: directory)
    }

    /// The gateway's settings for signing in here; `gateway` is its own address.
    func gatewayEnvironment(gateway: String) -> [String: String] {
        [
            "OIDC_ISSUER": issuer, "OIDC_CLIENT_ID": Self.clientID, "OIDC_CLIENT_SECRET": Self.clientSecret,
            "OIDC_PROVIDER_NAME": "Test University", "PUBLIC_URL": gateway,
        ]
    }

    /// A gateway's settings for a provider nothing listens at (loopback's discard port): it has the sign-in
    /// routes, for tests that never get as far as the provider.
    static let nowhere = [
        "OIDC_ISSUER": "http://127.0.0.1:9/openid", "OIDC_CLIENT_ID": clientID, "OIDC_CLIENT_SECRET": clientSecret,
        "PUBLIC_URL": "http://127.0.0.1:9",
    ]

    /// A browser command for `$BROWSER`: `browse.py` signing in as Alice at the address it is given, or declining
    /// there, what it visits written to `log`.
    static func browser(declining: Bool = false, log: URL) throws -> URL {
        let script = log.deletingLastPathComponent().appendingPathComponent("browser-\(UUID().uuidString).sh")
        try Data(
            """
            #!/bin/sh
            exec '\(python)' '\(folder.appendingPathComponent("browse.py").path)' "$1" --username \(username) --password \(password) \
            \(declining ? "--deny" : "") >>'\(log.path)' 2>&1

            """.utf8
        ).write(to: script)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: script.path)
        return script
    }

    /// `browse.py` on `url` as Alice, to its end: its exit status and what it printed.
    static func browse(_ url: String) throws -> (status: Int32, output: String) {
        let browse = Process()
        browse.executableURL = URL(fileURLWithPath: python)
        browse.arguments = [folder.appendingPathComponent("browse.py").path, url, "--username", username, "--password", password]
        let pipe = Pipe()
        browse.standardOutput = pipe
        browse.standardError = pipe
        try browse.run()
        let printed = pipe.fileHandleForReading.readDataToEndOfFile()
        browse.waitUntilExit()
        return (browse.terminationStatus, String(decoding: printed, as: UTF8.self))
    }
}

extension ClientSystem {
    /// The system with its gateway signing students in at a provider of their own, for `body`; both are
    /// stopped afterwards, whatever happens.
    static func withSignIn(_ body: (ClientSystem, SignInProvider) async throws -> Void) async throws {
        // The provider knows the gateway's callback before the gateway starts, and the gateway its issuer.
        let gatewayPort = freePort()
        let gateway = "http://127.0.0.1:\(gatewayPort)"
        let provider = try await SignInProvider(gateway: gateway)
        defer { provider.stop() }
        let system = try await start(gatewayPort: gatewayPort, gatewayEnvironment: provider.gatewayEnvironment(gateway: gateway))
        defer { system.stop() }
        try await body(system, provider)
    }
}
