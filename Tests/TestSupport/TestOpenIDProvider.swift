import Foundation

/// `Tests/oidc/provider.py`: a real OpenID Connect provider (django-oidc-provider) on a free loopback port,
/// with the gateway registered as a client that may send students back to `redirectURI`, and the given
/// people as its users (their groups in each ID token's `groups` claim), in a directory of its own.
public final class TestOpenIDProvider: Sendable {
    public static let clientID = "on-the-map"
    public static let clientSecret = "test-client-secret-4f1d9c2b7a"

    public struct User: Sendable {
        public var username: String
        public var password: String
        public var givenName: String
        public var familyName: String
        public var email: String
        /// The groups the provider puts the user in: its ID tokens name them in `groups` (none, no claim).
        public var groups: [String]

        public init(username: String, password: String, givenName: String, familyName: String, email: String, groups: [String] = []) {
            self.username = username
            self.password = password
            self.givenName = givenName
            self.familyName = familyName
            self.email = email
            self.groups = groups
        }
    }

    public let directory: URL
    public let process: Process
    public let port: Int
    public var issuer: String { "http://127.0.0.1:\(port)/openid" }

    /// `Tests/oidc`: the provider, and `browse.py`, a scripted browser that signs in there.
    public static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("oidc")

    /// The interpreter itself, not a launcher script that would keep its own process id and not pass on a signal.
    public static let python: String = {
        let which = Process()
        which.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        which.arguments = ["python3", "-c", "import sys; print(sys.executable)"]
        let pipe = Pipe()
        which.standardOutput = pipe
        try? which.run()
        which.waitUntilExit()
        return String(decoding: pipe.readUntilEnd(), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }()

    public init(users: [User], redirectURI: String) async throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("oidc-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let portFile = directory.appendingPathComponent("port")
        let process = Process()
        self.process = process
        process.executableURL = URL(fileURLWithPath: Self.python)
        process.arguments =
            [
                Self.folder.appendingPathComponent("provider.py").path, "serve", "--dir", directory.path, "--port-file", portFile.path,
                "--client-id", Self.clientID, "--client-secret", Self.clientSecret, "--redirect-uri", redirectURI,
            ] + users.flatMap { ["--user", "\($0.username):\($0.password):\($0.givenName):\($0.familyName):\($0.email)"] }
            + users.flatMap { user in user.groups.flatMap { ["--group", "\(user.username):\($0)"] } }
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

    /// A new signing key, the old ones gone, as an operator rotates them; the new key's id.
    @discardableResult
    public func rotateKeys() async throws -> String {
        try await blocking { [directory] in try Self.rotateKeys(in: directory) }
    }

    private static func rotateKeys(in directory: URL) throws -> String {
        let rotate = Process()
        rotate.executableURL = URL(fileURLWithPath: python)
        rotate.arguments = [folder.appendingPathComponent("provider.py").path, "rotate-keys", "--dir", directory.path]
        let pipe = Pipe()
        rotate.standardOutput = pipe
        try rotate.run()
        rotate.waitUntilExit()
        return String(decoding: pipe.readUntilEnd(), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// SIGKILL: a child of the test process starts with the signals its spawning thread blocks, SIGTERM among them.
    public func stop() {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: directory)
    }

    /// The provider for `body`, stopped afterwards whatever happens.
    public static func with(users: [User], redirectURI: String, _ body: (TestOpenIDProvider) async throws -> Void) async throws {
        let provider = try await TestOpenIDProvider(users: users, redirectURI: redirectURI)
        defer { provider.stop() }
        try await body(provider)
    }
}
