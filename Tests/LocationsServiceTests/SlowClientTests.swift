import Foundation
import HTTPTypes
import HummingbirdTesting
import ServiceKit
import TestSupport
import Testing

@testable import LocationsService

/// Clients that hold connections without using them, as an attacker would, against the real server on a
/// real socket, with its limits shortened so the test takes seconds: header 1 s, idle 2 s, 6 per address.
@Suite struct SlowClientTests {
    static func shortLimits(_ configuration: inout ServiceConfiguration) {
        configuration.limits.headerTimeout = .seconds(1)
        configuration.limits.bodyTimeout = .seconds(1)
        configuration.limits.idleTimeout = .seconds(2)
        configuration.limits.connectionsPerAddress = 6
    }

    static let listRequest = "GET /v1/StudentLocation HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(TestDatabase.internalToken)\r\n\r\n"

    /// A normal client keeps being answered within 1 s while the attack goes on.
    static func expectServedPromptly(_ client: any TestClientProtocol) async throws {
        let start = ContinuousClock.now
        let reply = try await client.send(.get, "/v1/StudentLocation")
        #expect(reply.status == .ok)
        #expect(ContinuousClock.now - start < .seconds(1))
    }

    @Test func aHeadSentOneByteEverySoOftenIsCutOffWhileOthersAreServed() async throws {
        try await withLiveService(configure: Self.shortLimits) { client, _ in
            let port = client.port!
            // Warm: the first list is read from the database, the rest from memory.
            _ = try await client.send(.get, "/v1/StudentLocation")
            let slow = try RawConnection(port: port)
            let started = ContinuousClock.now
            let request = Array(Self.listRequest)
            var sent = 0
            // One byte every 200 ms: the connection is never idle, and the head would take 20 s.
            while ContinuousClock.now - started < .seconds(3), sent < request.count {
                do { try slow.send(String(request[sent])) } catch { break }
                sent += 1
                try await Self.expectServedPromptly(client)
                if try await blocking({ slow.closedByPeer(within: .milliseconds(200)) }) != nil { break }
            }
            let elapsed = ContinuousClock.now - started
            #expect(sent < request.count, "the whole head went through")
            #expect(elapsed < .milliseconds(2_500), "closed after \(elapsed), header timeout 1 s")
        }
    }

    @Test func aConnectionThatSendsNothingIsClosedAtTheIdleTimeout() async throws {
        try await withLiveService(configure: Self.shortLimits) { client, _ in
            let idle = try RawConnection(port: client.port!)
            try await Self.expectServedPromptly(client)
            let closedAfter = await idle.closedByPeer(within: .seconds(5))
            #expect(closedAfter != nil, "still open after 5 s")
            #expect((closedAfter ?? .zero) > .milliseconds(1_500), "closed before the idle timeout: \(String(describing: closedAfter))")
        }
    }

    @Test func aSlowClientsKeptAliveConnectionGoesOnServingWhileItIsUsed() async throws {
        try await withLiveService(configure: Self.shortLimits) { client, _ in
            let connection = try RawConnection(port: client.port!)
            // Twelve requests over about 3.6 s on one connection: longer than the idle timeout, never idle.
            for _ in 0..<12 {
                try connection.send(Self.listRequest)
                let answer = try await connection.receiveResponse()
                #expect(answer.hasPrefix("HTTP/1.1 200 OK"))
                // real time: the server's idle timeout runs on its own clock, which a test cannot drive.
                try await Task.sleep(for: .milliseconds(300))
            }
        }
    }

    @Test func connectionsPastTheCapOfOneAddressAreRefusedWith429UntilOneCloses() async throws {
        try await withLiveService(configure: Self.shortLimits) { client, _ in
            let port = client.port!
            // The test client holds one connection of its own. Each is counted once the server has it, which an
            // answer on it shows.
            #expect(try await client.send(.get, "/v1/StudentLocation").status == .ok)
            var held = try (0..<5).map { _ in try RawConnection(port: port) }
            for connection in held {
                try connection.send(Self.listRequest)
                #expect(try await connection.receiveResponse().hasPrefix("HTTP/1.1 200 OK"))
            }
            let refused = try RawConnection(port: port)
            try refused.send(Self.listRequest)
            let answer = try await refused.receiveResponse()
            #expect(answer.hasPrefix("HTTP/1.1 429 Too Many Requests"))
            #expect(answer.contains("Retry-After: 10"))
            #expect(answer.contains(#""error":"Too many open connections from your address (at most 6); close some and try again.""#))
            #expect(await refused.closedByPeer(within: .seconds(2)) != nil, "a refused connection is closed")

            // The server closes its side once it has read the client's end, and lets go of the connection's place
            // as it does.
            let leaving = held.removeLast()
            leaving.finishSending()
            #expect(await leaving.closedByPeer(within: .seconds(2)) != nil, "the server kept a connection whose client left")
            let admitted = try RawConnection(port: port)
            try admitted.send(Self.listRequest)
            #expect(try await admitted.receiveResponse().hasPrefix("HTTP/1.1 200 OK"))
            _ = held
        }
    }

    @Test func everyAnswerForbidsTypeSniffingWhicheverDoorItLeavesBy() async throws {
        try await withLiveService { client, _ in
            let hot = try await client.send(.get, "/v1/StudentLocation")
            let routed = try await client.send(.get, "/v1/StudentLocation?limit=1")
            let missing = try await client.send(.get, "/no/such/route")
            let refused = try await client.send(.get, "/v1/StudentLocation", token: false)
            for reply in [hot, routed, missing, refused] {
                #expect(reply.headers[HTTPField.Name("X-Content-Type-Options")!] == "nosniff", "\(reply.status)")
            }
        }
    }
}
