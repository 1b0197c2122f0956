import Foundation
import TestSupport

/// The real `onthemap` binary, run as a person or a script would run it, with its own config folder.
struct CLI: Sendable {
    let gateway: String
    let home: URL

    init(gateway: String, home: URL = FileManager.default.temporaryDirectory.appendingPathComponent("onthemap-home-\(UUID().uuidString)")) {
        self.gateway = gateway
        self.home = home
        try? FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
    }

    static var binary: URL { ServiceProcess.binary("onthemap") }

    var configFolder: URL { home.appendingPathComponent("config/onthemap") }

    var environment: [String: String] {
        [
            "HOME": home.path, "XDG_CONFIG_HOME": home.appendingPathComponent("config").path, "ONTHEMAP_GATEWAY": gateway,
            "PATH": "/usr/bin:/bin", "TERM": "xterm-256color",
        ]
    }

    struct Result: Sendable {
        var status: Int32
        var output: String
        var errors: String
        var elapsed: Duration
    }

    /// Runs one command to its end, `input` on stdin, stdout and stderr apart, with `extra` in its environment.
    func run(
        _ arguments: [String], input: String = "", environmentAdding extra: [String: String] = [:],
        timeout: Duration = .seconds(30)
    ) async throws -> Result {
        let process = Process()
        process.executableURL = Self.binary
        process.arguments = arguments
        process.environment = environment.merging(extra) { $1 }
        let folder = FileManager.default.temporaryDirectory
        let (inFile, outFile, errFile) = (
            folder.appendingPathComponent("cli-in-\(UUID())"), folder.appendingPathComponent("cli-out-\(UUID())"),
            folder.appendingPathComponent("cli-err-\(UUID())")
        )
        try Data(input.utf8).write(to: inFile)
        for file in [outFile, errFile] { _ = FileManager.default.createFile(atPath: file.path, contents: nil) }
        defer { for file in [inFile, outFile, errFile] { try? FileManager.default.removeItem(at: file) } }
        process.standardInput = try FileHandle(forReadingFrom: inFile)
        process.standardOutput = try FileHandle(forWritingTo: outFile)
        process.standardError = try FileHandle(forWritingTo: errFile)
        let started = ContinuousClock.now
        let exit = try ProcessExit(running: process)
        let ended = await exit.status(within: timeout)
        let elapsed = ContinuousClock.now - started
        if ended == nil { process.terminate() }
        process.waitUntilExit()
        return Result(
            status: process.terminationStatus, output: (try? String(contentsOf: outFile, encoding: .utf8)) ?? "",
            errors: (try? String(contentsOf: errFile, encoding: .utf8)) ?? "", elapsed: elapsed)
    }

    /// Starts a long-running command (`watch`), its stdout and stderr kept as they are written.
    func start(_ arguments: [String], environmentAdding extra: [String: String] = [:]) throws -> RunningCLI {
        try RunningCLI(arguments: arguments, environment: environment.merging(extra) { $1 })
    }
}

final class RunningCLI: @unchecked Sendable {
    let process = Process()
    private let exit: ProcessExit
    private let stdout = CapturedOutput()
    private let stderr = CapturedOutput()

    init(arguments: [String], environment: [String: String]) throws {
        process.executableURL = CLI.binary
        process.arguments = arguments
        process.environment = environment
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = stdout.pipe
        process.standardError = stderr.pipe
        exit = try ProcessExit(running: process)
    }

    var output: String { stdout.text }
    var errors: String { stderr.text }
    var lines: [String] { Self.lines(output) }
    private static func lines(_ text: String) -> [String] { text.split(separator: "\n").map(String.init) }

    /// Waits until stdout holds `count` lines; answers how long that took.
    func waitForLines(_ count: Int, within limit: Duration) async throws -> Duration {
        let started = ContinuousClock.now
        guard await stdout.wait(within: limit, until: { Self.lines($0).count >= count }) else {
            throw HarnessError("\(lines.count) of \(count) lines within \(limit):\n\(output)\nstderr:\n\(errors)")
        }
        return ContinuousClock.now - started
    }

    /// The first line on stderr that starts with `prefix`, once it is written.
    func errorLine(startingWith prefix: String, within limit: Duration) async throws -> String {
        let found = { @Sendable (text: String) in Self.lines(text).first { $0.hasPrefix(prefix) } }
        guard await stderr.wait(within: limit, until: { found($0) != nil }), let line = found(errors) else {
            throw HarnessError("no line starting with \"\(prefix)\" on stderr within \(limit):\n\(errors)\nstdout:\n\(output)")
        }
        return line
    }

    /// The exit status, or nil while the command still runs after `limit`. Once it has exited, `output`
    /// and `errors` hold all it wrote.
    func status(within limit: Duration) async -> Int32? {
        guard let status = await exit.status(within: limit) else { return nil }
        _ = await stdout.ended(within: .seconds(5))
        _ = await stderr.ended(within: .seconds(5))
        return status
    }

    /// Ctrl-C, and the exit status.
    func interrupt() async -> Int32? {
        process.interrupt()
        return await status(within: .seconds(5))
    }

    deinit {
        if process.isRunning { process.terminate() }
    }
}
