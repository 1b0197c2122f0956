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
        try process.run()
        let deadline = started + timeout
        while process.isRunning, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        let elapsed = ContinuousClock.now - started
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        return Result(
            status: process.terminationStatus, output: (try? String(contentsOf: outFile, encoding: .utf8)) ?? "",
            errors: (try? String(contentsOf: errFile, encoding: .utf8)) ?? "", elapsed: elapsed)
    }

    /// Starts a long-running command (`watch`), its stdout collected in a file that `output` reads.
    func start(_ arguments: [String]) throws -> RunningCLI {
        try RunningCLI(arguments: arguments, environment: environment)
    }
}

final class RunningCLI: @unchecked Sendable {
    let process = Process()
    private let outFile = FileManager.default.temporaryDirectory.appendingPathComponent("cli-out-\(UUID())")
    private let errFile = FileManager.default.temporaryDirectory.appendingPathComponent("cli-err-\(UUID())")

    init(arguments: [String], environment: [String: String]) throws {
        process.executableURL = CLI.binary
        process.arguments = arguments
        process.environment = environment
        for file in [outFile, errFile] { _ = FileManager.default.createFile(atPath: file.path, contents: nil) }
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = try FileHandle(forWritingTo: outFile)
        process.standardError = try FileHandle(forWritingTo: errFile)
        try process.run()
    }

    var output: String { (try? String(contentsOf: outFile, encoding: .utf8)) ?? "" }
    var errors: String { (try? String(contentsOf: errFile, encoding: .utf8)) ?? "" }
    var lines: [String] { output.split(separator: "\n").map(String.init) }

    /// Waits until stdout holds `count` lines; answers how long that took.
    func waitForLines(_ count: Int, within limit: Duration) async throws -> Duration {
        let started = ContinuousClock.now
        while lines.count < count {
            guard ContinuousClock.now - started < limit else {
                throw HarnessError("\(lines.count) of \(count) lines within \(limit):\n\(output)\nstderr:\n\(errors)")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        return ContinuousClock.now - started
    }

    /// Ctrl-C, and the exit status.
    func interrupt() async -> Int32? {
        process.interrupt()
        let deadline = ContinuousClock.now + .seconds(5)
        while process.isRunning, ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(10)) }
        return process.isRunning ? nil : process.terminationStatus
    }

    deinit {
        if process.isRunning { process.terminate() }
        for file in [outFile, errFile] { try? FileManager.default.removeItem(at: file) }
    }
}
