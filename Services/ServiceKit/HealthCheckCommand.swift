import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `SERVICE healthcheck`: asks the running service's own `/readyz` and exits 0 when it answers 200, 1
/// otherwise, so a container health check needs no curl in the image. One line says what was found.
/// A plain blocking socket: the probe runs once in a process of its own, and must not need the event
/// loops, the database or any setting but the port.
public enum HealthCheckCommand {
    public static let abstract = "Ask the running service's /readyz on 127.0.0.1 (port from PORT): exit 0 when it is ready, 1 otherwise."

    /// Probes `http://127.0.0.1:PORT/readyz` (`PORT` as `serve` reads it) and returns the exit status.
    public static func run(service: String, defaultPort: Int, timeout: Duration = .seconds(3)) -> Int32 {
        let host = "127.0.0.1"
        let port = configurationOrExit(service) { environment throws(ConfigurationError) in
            try EnvironmentReader(environment).port(default: defaultPort)
        }
        switch ReadinessProbe.check(host: host, port: port, timeout: timeout) {
        case .ready:
            print("\(service) on \(host):\(port) is ready")
            return 0
        case .notReady(let answer):
            FileHandle.standardError.write(Data("\(service) on \(host):\(port) is not ready: \(answer)\n".utf8))
            return 1
        }
    }
}

/// One `GET /readyz` over HTTP/1.1 with a deadline on every step.
enum ReadinessProbe {
    enum Outcome: Equatable {
        case ready
        /// The status line and body, or why nothing was read.
        case notReady(String)
    }

    static func check(host: String, port: Int, timeout: Duration) -> Outcome {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else { return .notReady("\(host) is not an IPv4 address") }

        #if canImport(Glibc)
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let descriptor = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard descriptor >= 0 else { return .notReady("no socket: \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        // On Linux the send deadline bounds connect too.
        let seconds = timeout.components.seconds
        var limit = timeval(tv_sec: .init(seconds), tv_usec: .init(timeout.components.attoseconds / 1_000_000_000_000))
        for option in [SO_RCVTIMEO, SO_SNDTIMEO] {
            setsockopt(descriptor, SOL_SOCKET, option, &limit, socklen_t(MemoryLayout<timeval>.size))
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { return .notReady("cannot connect: \(String(cString: strerror(errno)))") }

        let request = Array("GET /readyz HTTP/1.1\r\nHost: \(host):\(port)\r\nConnection: close\r\n\r\n".utf8)
        guard request.withUnsafeBytes({ send(descriptor, $0.baseAddress, $0.count, 0) }) == request.count else {
            return .notReady("cannot send the request: \(String(cString: strerror(errno)))")
        }
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while answer.count < 65536 {
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count < 0 { return .notReady("no answer: \(String(cString: strerror(errno)))") }
            if count == 0 { break }
            answer += buffer[..<count]
        }
        return outcome(of: String(decoding: answer, as: UTF8.self))
    }

    /// Ready only on a 200; otherwise the status line and the body (the reason `/readyz` gives).
    static func outcome(of answer: String) -> Outcome {
        // "\r\n" is one Character, a newline.
        let lines = answer.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline)
        guard let statusLine = lines.first, !statusLine.isEmpty else { return .notReady("the connection closed without an answer") }
        let parts = statusLine.split(separator: " ", maxSplits: 2)
        if parts.count >= 2, parts[0].hasPrefix("HTTP/1."), parts[1] == "200" { return .ready }
        let body = lines.drop { !$0.isEmpty }.dropFirst().joined(separator: " ")
        return .notReady(body.isEmpty ? String(statusLine) : "\(statusLine) \(body)")
    }
}
