import Foundation
import TestSupport

/// `Tests/oidc/provider.py`, a real OpenID Connect provider (django-oidc-provider), on a free loopback port
/// with one student, Alice; and `Tests/oidc/browse.py`, a scripted browser that signs in there.
final class SignInProvider: Sendable {
    static let clientID = TestOpenIDProvider.clientID
    static let clientSecret = TestOpenIDProvider.clientSecret
    static let username = "alice"
    static let password = "wonderland-9"
    static let email = "alice@school.example"
    static let python = TestOpenIDProvider.python
    private static let folder = TestOpenIDProvider.folder

    let provider: TestOpenIDProvider
    var issuer: String { provider.issuer }

    /// The provider, sending students back to `gateway`'s callback only.
    init(gateway: String) async throws {
        provider = try await TestOpenIDProvider(
            users: [.init(username: Self.username, password: Self.password, givenName: "Alice", familyName: "Liddell", email: Self.email)],
            redirectURI: gateway + "/v1/auth/oidc/callback")
    }

    func stop() { provider.stop() }

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
        let printed = pipe.readUntilEnd()
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
