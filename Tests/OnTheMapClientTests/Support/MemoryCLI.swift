import ArgumentParser
import Foundation
import OnTheMapClient
import Synchronization
import TestSupport

@testable import OnTheMapCLI
@testable import ServiceTwins

/// The `onthemap` commands run inside the test process, as a script in a pipe runs the binary: its
/// arguments, stdin, environment and config folder, and what it writes to stdout and stderr and its exit
/// status; its calls go to a gateway in memory (`MemorySystem`), or over HTTP. There is no terminal: what needs one (prompts, colour,
/// the spinner, Ctrl-C) is `PseudoTerminal`'s and `CLI`'s, with the real binary.
struct MemoryCLI: Sendable {
    /// The gateway the commands use unless `--gateway` says.
    let gateway: String
    let home: URL
    /// Each call to the gateway whose URL it names; nil: over HTTP, as the binary's.
    let transport: (any GatewayTransport)?

    /// Commands on `systems`, the first by default, another with `--gateway` and its URL.
    init(_ systems: MemorySystem...) {
        self.init(gateway: systems[0].url, transport: ByGateway(systems: systems))
    }

    /// Commands on a gateway reached over HTTP (`transport` nil), or through `transport`.
    init(gateway: String, transport: (any GatewayTransport)? = nil) {
        self.gateway = gateway
        self.transport = transport
        home = FileManager.default.temporaryDirectory.appendingPathComponent("onthemap-home-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
    }

    /// A call handed to the system whose URL begins the call's.
    private struct ByGateway: GatewayTransport {
        let systems: [MemorySystem]

        func exchange(_ request: OnTheMapClient.Request, timeout: Duration) async throws -> OnTheMapClient.Answer {
            guard let system = systems.first(where: { request.url.hasPrefix($0.url + "/") }) else {
                throw RouterTransportError(reason: "no gateway in memory at \(request.url)")
            }
            return try await system.transport.exchange(request, timeout: timeout)
        }
    }
    var configFolder: URL { home.appendingPathComponent("config/onthemap") }

    var environment: [String: String] {
        ["HOME": home.path, "XDG_CONFIG_HOME": home.appendingPathComponent("config").path, "ONTHEMAP_GATEWAY": gateway]
    }

    /// Runs one command to its end, `input` on stdin, stdout and stderr apart, with `extra` in its environment.
    func run(_ arguments: [String], input: String = "", environmentAdding extra: [String: String] = [:]) async -> CLI.Result {
        let output = Mutex<[UInt8]>([])
        let errors = Mutex<[UInt8]>([])
        let lines = Mutex(input.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)[...])
        let console = Console(
            environment: environment.merging(extra) { $1 }, output: { bytes in output.withLock { $0 += bytes } },
            errors: { bytes in errors.withLock { $0 += bytes } },
            input: { lines.withLock { $0.count > 1 || $0.first?.isEmpty == false ? $0.popFirst() : nil } }, transport: transport)
        let started = ContinuousClock.now
        let status = await Console.$current.withValue(console) { await Self.main(arguments) }
        return CLI.Result(
            status: status, output: String(decoding: output.withLock { $0 }, as: UTF8.self),
            errors: String(decoding: errors.withLock { $0 }, as: UTF8.self), elapsed: ContinuousClock.now - started)
    }

    /// What ArgumentParser's `main` does with a command line: parse it, run the command, and for a failure
    /// print its message (help on stdout, the rest on stderr) and answer its exit code.
    private static func main(_ arguments: [String]) async -> Int32 {
        do {
            var command = try OnTheMap.parseAsRoot(arguments)
            if var command = command as? AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
            return 0
        } catch {
            let message = OnTheMap.fullMessage(for: error)
            let code = OnTheMap.exitCode(for: error)
            if !message.isEmpty {
                if code == .success { Terminal.standardOutput(message) } else { Terminal.standardError(message) }
            }
            return code.rawValue
        }
    }
}
