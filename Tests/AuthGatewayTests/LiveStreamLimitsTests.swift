import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import OnTheMapShared
import ServiceKit
import TestSupport
import Testing

@testable import AuthGateway

/// What one client address may hold of the live feed, and how soon a stream whose client left is let go.
@Suite struct LiveStreamLimitsTests {
    static func streamRequest(forwardedFor: String? = nil) -> String {
        "GET /v1/StudentLocation/events HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n"
            + (forwardedFor.map { "X-Forwarded-For: \($0)\r\n" } ?? "") + "\r\n"
    }

    /// Opens a live stream on a raw connection and reads its first lines.
    static func openStream(_ port: Int, forwardedFor: String? = nil) async throws -> (RawConnection, String) {
        let connection = try RawConnection(port: port)
        try connection.send(streamRequest(forwardedFor: forwardedFor))
        return (connection, try await blocking { try connection.receiveHead() })
    }

    static func waitForOpenStreams(_ expected: Int, _ client: any TestClientProtocol, within limit: Duration) async throws -> Duration? {
        try await waitForGauge("onthemap_live_streams", Double(expected), client, within: limit)
    }

    @Test func aStreamWhoseClientLeftIsLetGoAtOnceNotAtTheNextHeartbeat() async throws {
        try await withGateway { client, _ in
            let (connection, head) = try await Self.openStream(client.port!)
            #expect(head.hasPrefix("HTTP/1.1 200 OK"))
            #expect(try await Self.waitForOpenStreams(1, client, within: .seconds(2)) != nil)
            connection.close()
            // Heartbeats come every 15 s; the stream must be gone long before.
            let gone = try await Self.waitForOpenStreams(0, client, within: .seconds(3))
            #expect(gone != nil && gone! < .seconds(1), "let go after \(String(describing: gone))")
        }
    }

    @Test func streamsPastTheCapOfOneAddressAreRefusedWith429InParseShape() async throws {
        try await withGateway(configure: { $0.streamsPerClient = 2 }) { client, _ in
            let first = try await Self.openStream(client.port!)
            let second = try await Self.openStream(client.port!)
            #expect(first.1.hasPrefix("HTTP/1.1 200 OK") && second.1.hasPrefix("HTTP/1.1 200 OK"))
            let third = try await client.send(.get, "/v1/StudentLocation/events")
            #expect(third.status == .tooManyRequests)
            #expect(third.headers[.retryAfter] == "10")
            #expect(third.body == #"{"code":155,"error":"Too many live streams open from your address (at most 2); close one and try again."}"#)
            first.0.close()
            #expect(try await Self.waitForOpenStreams(1, client, within: .seconds(2)) != nil)
            let again = try await Self.openStream(client.port!)
            #expect(again.1.hasPrefix("HTTP/1.1 200 OK"), "a slot freed by a client that left is open again")
        }
    }

    @Test func aForgedForwardedForFromAnUntrustedPeerGetsNoFreshAllowance() async throws {
        try await withGateway(configure: { $0.streamsPerClient = 1 }) { client, _ in
            let first = try await Self.openStream(client.port!, forwardedFor: "198.51.100.1")
            #expect(first.1.hasPrefix("HTTP/1.1 200 OK"))
            let second = try await Self.openStream(client.port!, forwardedFor: "198.51.100.2")
            #expect(second.1.hasPrefix("HTTP/1.1 429"), "the header of a peer we do not trust counts for nothing")
        }
    }

    @Test func behindATrustedProxyEachForwardedClientHasItsOwnAllowance() async throws {
        try await withGateway(configure: {
            $0.streamsPerClient = 1
            $0.limits.trustedProxies = TrustedProxies("127.0.0.1")!
        }) { client, _ in
            let first = try await Self.openStream(client.port!, forwardedFor: "198.51.100.1")
            let second = try await Self.openStream(client.port!, forwardedFor: "198.51.100.2")
            #expect(first.1.hasPrefix("HTTP/1.1 200 OK") && second.1.hasPrefix("HTTP/1.1 200 OK"))
            let again = try await Self.openStream(client.port!, forwardedFor: "198.51.100.1")
            #expect(again.1.hasPrefix("HTTP/1.1 429"))
        }
    }

    @Test func aStreamThatFallsTooFarBehindGetsTheOldestItHoldsThenEnds() async {
        let (stream, continuation) = LiveFeed.makeStream(limit: 3)
        func change(_ position: Int64) -> LiveFeed.Message {
            .change(LogPosition(transactionId: 1, position: position), frame: ByteBuffer(string: "id: 1-\(position)\n\n"))
        }
        for position in 1...5 { LiveFeed.offer(change(Int64(position)), to: continuation) }
        var received: [Int64] = []
        for await message in stream {
            guard case .change(let position, _) = message else { continue }
            received.append(position.position)
        }
        // The stream ended after the oldest three: the fourth and fifth, newer than anything the client
        // got, are in the stretch of the log it reads when it reconnects with the last id it has.
        #expect(received == [1, 2, 3])
    }
}
