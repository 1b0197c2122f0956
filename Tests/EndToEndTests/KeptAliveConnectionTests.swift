import Foundation
import TestSupport
import Testing

/// A connection kept alive for good, as a proxy in front of the gateway keeps its own and the gateway keeps
/// its pool's to locations-service, costs the same after a hundred thousand answers as after a few: every
/// kind of answer, from memory before the router or from the router, leaves nothing behind.
@Suite struct KeptAliveConnectionTests {
    static let answers = 20_000
    /// What a process may grow by while one connection gets `answers` answers of one kind: 0.15 MB at most
    /// is the allocator's own caches. A leak of even the 24 bytes an HTTP method takes for each answer, in
    /// an array that doubles, holds 0.75 MB after 20,000 answers (a capacity of 32,768).
    static let bound = 384 * 1024

    /// One kind of request, sent again and again on one connection.
    struct Kind: CustomStringConvertible {
        let description: String
        let service: ServiceProcess
        let request: String
        let status: Int
    }

    /// The heap and other anonymous memory the process holds, in bytes (`/proc/PID/smaps_rollup`).
    func anonymousMemory(_ service: ServiceProcess) throws -> Int {
        let rollup = try String(contentsOfFile: "/proc/\(service.process.processIdentifier)/smaps_rollup", encoding: .utf8)
        let line = try #require(rollup.split(separator: "\n").first { $0.hasPrefix("Anonymous:") })
        let kilobytes = try #require(Int(line.split(separator: " ")[1]))
        return kilobytes * 1024
    }

    /// Sends `request` `count` times on `connection`, pipelined 200 at a time as a busy proxy may send
    /// them, and returns the statuses of the answers.
    func exchange(_ request: String, _ count: Int, on connection: RawConnection) async throws -> [Int] {
        var statuses: [Int] = []
        statuses.reserveCapacity(count)
        while statuses.count < count {
            let batch = min(200, count - statuses.count)
            try connection.send(String(repeating: request, count: batch))
            let answered = try await connection.receiveStatuses(batch)
            statuses += answered
            guard answered.count == batch else { break }
        }
        return statuses
    }

    /// A stream held open from the test's address, so that the next ones are refused (one a client).
    func holdStream(on gateway: ServiceProcess) async throws -> RawConnection {
        let stream = try RawConnection(port: gateway.port)
        try stream.send("GET /v1/StudentLocation/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        _ = try await stream.receiveHead()
        return stream
    }

    @Test func everyKindOfAnswerLeavesAKeptAliveConnectionAsSmallAsItWas() async throws {
        try await withSystem(gatewaySettings: ["MAX_STREAMS_PER_CLIENT": "1"]) { gateway, locations in
            try await expectFlatMemory(gateway: gateway, locations: locations)
        }
    }

    /// Each kind of answer `answers` times on a connection of its own, and what each service grew by meanwhile.
    func expectFlatMemory(gateway: ServiceProcess, locations: ServiceProcess) async throws {
        let stream = try await holdStream(on: gateway)
        defer { stream.close() }

        let token = "Authorization: Bearer \(TestDatabase.internalToken)\r\n"
        let list = "GET /v1/StudentLocation HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        let post = #"{"firstName":"A"}"#
        // Each kind of answer from before the router (from memory, worked out, a stream refused), and the
        // router's for comparison.
        let kinds = [
            Kind(description: "the service's latest list", service: locations, request: "\(list)\(token)\r\n", status: 200),
            Kind(description: "the gateway's latest list", service: gateway, request: "\(list)\r\n", status: 200),
            Kind(
                description: "a write the gateway refuses", service: gateway,
                request: "POST /v1/StudentLocation HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: \(post.utf8.count)\r\n\r\n\(post)",
                status: 401),
            Kind(
                description: "a stream the gateway refuses", service: gateway,
                request: "GET /v1/StudentLocation/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", status: 429),
            Kind(description: "the gateway's router", service: gateway, request: "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", status: 200),
        ]
        // Every connection stays open to the end: memory that one let go of would be found again by the next.
        var open: [RawConnection] = []
        defer { for connection in open { connection.close() } }
        for kind in kinds {
            let connection = try RawConnection(port: kind.service.port)
            open.append(connection)
            // Warmed up first: the first answers fill caches that then stay as they are.
            #expect(try await exchange(kind.request, 2_000, on: connection).allSatisfy { $0 == kind.status }, "\(kind)")
            let before = try anonymousMemory(kind.service)
            let statuses = try await exchange(kind.request, Self.answers, on: connection)
            let grown = try anonymousMemory(kind.service) - before
            #expect(statuses.count == Self.answers && statuses.allSatisfy { $0 == kind.status }, "\(kind): \(Set(statuses))")
            #expect(grown < Self.bound, "\(kind): \(grown) bytes more after \(Self.answers) answers on one connection")
        }
    }

    @Test func theRoutersAnswersAfterOnesFromMemoryAnswerTheirOwnRequests() async throws {
        try await withSystem { gateway, _ in
            let connection = try RawConnection(port: gateway.port)
            defer { connection.close() }
            try connection.send("GET /v1/StudentLocation HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            #expect(try await connection.receiveResponse().hasSuffix(#"{"results":[]}"#))
            // A HEAD gets its head alone (the router answers it as its GET, with a length, and none of that
            // body is sent), and the GET after it gets its whole answer.
            try connection.send("HEAD /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            let head = try await connection.receiveHead()
            #expect(head.hasPrefix("HTTP/1.1 200 OK\r\n") && head.contains("\r\nContent-Length: "), "\(head)")
            try connection.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            let whole = try await connection.receiveResponse()
            #expect(whole.hasPrefix("HTTP/1.1 200 OK\r\n") && whole.hasSuffix("}"), "\(whole)")
        }
    }
}
