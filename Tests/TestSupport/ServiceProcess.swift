import Foundation
import Synchronization

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A real service binary, started as a child process for tests that need whole processes: replicas on
/// one database, signals, a database that goes away, the gateway in front of the service.
public final class ServiceProcess: @unchecked Sendable {
    /// The port asked for, if one was.
    private let requestedPort: Int?
    /// The port the process listens on, once `waitUntilReady` has read it from the log.
    private let boundPort = Mutex<Int?>(nil)
    public let process = Process()
    private let log = CapturedOutput()
    private let exit: ProcessExit

    /// A product binary: the test bundle sits in the build folder, beside the products.
    public static func binary(_ name: String) -> URL {
        var folder = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        while !FileManager.default.fileExists(atPath: folder.appendingPathComponent(name).path), folder.path != "/" {
            folder.deleteLastPathComponent()
        }
        return folder.appendingPathComponent(name)
    }

    /// Without a `port`, the process listens on one the kernel gives it (port 0), found once it is ready.
    /// A port picked beforehand could be taken in between by a server of the test process, which binds
    /// port 0 too; a `port` is for starting a process again where an earlier one listened. `LOG_LEVEL` is
    /// info unless `environment` asks for more: readiness is read from the line the server logs once it listens.
    public init(_ name: String, environment: [String: String], port: Int? = nil) throws {
        requestedPort = port
        let logLevel = environment["LOG_LEVEL"] ?? "info"
        precondition(["trace", "debug", "info"].contains(logLevel), "LOG_LEVEL \(logLevel) hides the line that says the service listens")
        process.executableURL = Self.binary(name)
        process.arguments = ["serve", "--host", "127.0.0.1", "--port", String(port ?? 0)]
        process.environment = environment.merging(["INTERNAL_TOKEN": TestDatabase.internalToken, "LOG_LEVEL": logLevel]) { mine, _ in mine }
        process.standardOutput = log.pipe
        process.standardError = log.pipe
        exit = try ProcessExit(running: process)
    }

    /// Where the process listens: known from the start when it was asked for, else once `waitUntilReady`
    /// has returned.
    public var port: Int {
        guard let port = requestedPort ?? boundPort.withLock({ $0 }) else {
            fatalError("the port of a service started on port 0 is known once waitUntilReady has returned")
        }
        return port
    }

    /// locations-service on `databaseURL`; `logLevel: "debug"` logs each request as it starts, for tests that
    /// wait for a request to be in the service's hands.
    public convenience init(locationsOn databaseURL: String, port: Int? = nil, logLevel: String = "info") throws {
        try self.init("locations-service", environment: ["DATABASE_URL": databaseURL, "LOG_LEVEL": logLevel], port: port)
    }

    public var output: String { log.text }

    /// `NAME healthcheck` as a container's health check runs it, for a service listening on `port`: the
    /// exit status, and what it printed on stdout and stderr together.
    public static func healthCheck(_ name: String, port: Int) async throws -> (status: Int32, output: String) {
        try await command(name, ["healthcheck"], environment: ["PORT": String(port)])
    }

    /// `NAME ARGUMENTS…` run to its end, as an operator runs a one-off task: the exit status, and what it
    /// printed on stdout and stderr together. It is waited for on a thread of its own (`blocking`), not on Swift's
    /// cooperative pool, which every test of the run shares.
    public static func command(
        _ name: String, _ arguments: [String], environment: [String: String]
    ) async throws -> (status: Int32, output: String) {
        try await blocking { try run(name, arguments, environment: environment) }
    }

    private static func run(_ name: String, _ arguments: [String], environment: [String: String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = binary(name)
        process.arguments = arguments
        process.environment = environment
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let printed = pipe.readUntilEnd()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: printed, as: UTF8.self))
    }

    /// Waits for the line the server logs once it listens, then for `/readyz` to answer 200 (a server may
    /// listen before its database connection is up, and says so with a 503 meanwhile). The line comes from
    /// this process, with the port it bound: had it failed to bind the port it was given, it would have
    /// exited instead, and whatever else listens there is never asked.
    public func waitUntilReady(timeout: Duration = .seconds(30)) async throws {
        guard await log.wait(within: timeout, until: { Self.listeningPort(in: $0) != nil }), let bound = Self.listeningPort(in: output) else {
            let status = log.ended ? await exit.status(within: .seconds(5)) : nil
            throw HarnessError("service \(status.map { "exited early (status \($0))" } ?? "not listening after \(timeout)"):\n\(output)")
        }
        guard requestedPort == nil || requestedPort == bound else { throw HarnessError("asked for port \(port), listens on \(bound):\n\(output)") }
        boundPort.withLock { $0 = bound }
        var (status, answer) = (0, "")
        _ = try await waitFor(within: timeout, every: .milliseconds(50)) {
            (status, answer) = try await get("/readyz", token: false)
            return status == 200 || log.ended
        }
        guard status == 200 else { throw HarnessError("listening but not ready: \(status) \(answer)\n\(output)") }
    }

    /// The port in the line Hummingbird logs once the server listens (up to the line's end, or the end of its
    /// JSON string with `LOG_FORMAT=json`, so the whole number).
    private static func listeningPort(in log: String) -> Int? {
        log.firstMatch(of: /Server started and listening on 127\.0\.0\.1:([0-9]+)["\n]/).flatMap { Int($0.1) }
    }

    public func request(
        _ method: String, _ path: String, body: String? = nil, headers: [String: String] = [:],
        token: Bool = true, timeout: TimeInterval = 10
    ) async throws -> (Int, String) {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)\(path)")!, timeoutInterval: timeout)
        request.httpMethod = method
        if token { request.setValue("Bearer \(TestDatabase.internalToken)", forHTTPHeaderField: "Authorization") }
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        request.httpBody = body.map { Data($0.utf8) }
        let (data, response) = try await URLSession.shared.data(for: request)
        return ((response as! HTTPURLResponse).statusCode, String(decoding: data, as: UTF8.self))
    }

    public func get(_ path: String, token: Bool = true) async throws -> (Int, String) {
        try await request("GET", path, token: token)
    }

    public func terminate() { if process.isRunning { process.terminate() } }

    /// Whether the gauge `name` on the process's /metrics reads `value` by the deadline.
    public func metric(_ name: String, reaches value: Double, within limit: Duration = .seconds(5)) async throws -> Bool {
        try await waitFor(within: limit) { gauge(name, in: try await get("/metrics").1) == value } != nil
    }

    /// Whether the process's output holds `text` by the deadline: each write of the process is looked at as it comes.
    public func output(contains text: String, within limit: Duration = .seconds(5)) async -> Bool {
        await log.wait(within: limit) { $0.contains(text) }
    }

    /// Waits for the process to exit and returns its status, or nil if it is still running at the deadline.
    public func waitForExit(timeout: Duration) async -> Int32? {
        await exit.status(within: timeout)
    }

    deinit {
        if process.isRunning {
            process.interrupt()
            process.terminate()
        }
    }
}

/// Ports `freePort` has handed out in this test process. The kernel offers a port again as soon as the
/// probe socket is closed, so two services started side by side could be given one port: the second
/// fails to bind, and the first answers the second's readiness check and every request meant for it.
private let handedOut = LockedPorts()

private final class LockedPorts: @unchecked Sendable {
    private let lock = NSLock()
    private var ports: Set<Int> = []
    /// Whether `port` is new to this process (and now taken).
    func take(_ port: Int) -> Bool { lock.withLock { ports.insert(port).inserted } }
}

/// A loopback TCP port nobody listens on right now, and never handed out before in this process.
public func freePort() -> Int {
    while true {
        let port = probedPort()
        if handedOut.take(port) { return port }
    }
}

private func probedPort() -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
    _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
    return Int(UInt16(bigEndian: address.sin_port))
}

/// `name{labels}` → value, from Prometheus text.
public func metricSamples(_ text: String) -> [String: Double] {
    var samples: [String: Double] = [:]
    for line in text.split(separator: "\n") where !line.hasPrefix("#") {
        guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else { continue }
        samples[String(line[..<space])] = value
    }
    return samples
}

/// The value of the unlabelled metric `name` in Prometheus text, nil when it is not there.
public func gauge(_ name: String, in metrics: String) -> Double? {
    metricSamples(metrics)[name]
}
