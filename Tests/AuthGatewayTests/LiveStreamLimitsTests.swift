import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import NIOEmbedded
import OnTheMapShared
import ServiceKit
import TestSupport
import Testing

@testable import AuthGateway
@testable import PreparedHTTP
@testable import ServiceTwins

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
        return (connection, try await connection.receiveHead())
    }

    static func waitForOpenStreams(_ expected: Int, _ client: any TestClientProtocol, within limit: Duration) async throws -> Duration? {
        try await waitForGauge("onthemap_live_streams", Double(expected), client, within: limit)
    }

    @Test func aStreamWhoseClientLeftIsLetGoAtOnceNotAtTheNextHeartbeat() async throws {
        // Heartbeats every 2 minutes: a stream let go within one minute was not found gone by the next
        // heartbeat's write, however busy the machine.
        try await withGatewaySocket(configure: { $0.liveHeartbeat = .seconds(120) }) { client, _ in
            let (connection, head) = try await Self.openStream(client.port!)
            #expect(head.hasPrefix("HTTP/1.1 200 OK"))
            #expect(try await Self.waitForOpenStreams(1, client, within: .seconds(30)) != nil)
            connection.close()
            let gone = try await Self.waitForOpenStreams(0, client, within: .seconds(60))
            #expect(gone != nil, "still open a minute after its client left")
        }
    }

    @Test func streamsPastTheCapOfOneAddressAreRefusedWith429InParseShape() async throws {
        try await withGatewaySocket(configure: { $0.streamsPerClient = 2 }) { client, _ in
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
        try await withGatewaySocket(configure: { $0.streamsPerClient = 1 }) { client, _ in
            let first = try await Self.openStream(client.port!, forwardedFor: "198.51.100.1")
            #expect(first.1.hasPrefix("HTTP/1.1 200 OK"))
            let second = try await Self.openStream(client.port!, forwardedFor: "198.51.100.2")
            #expect(second.1.hasPrefix("HTTP/1.1 429"), "the header of a peer we do not trust counts for nothing")
        }
    }

    @Test func behindATrustedProxyEachForwardedClientHasItsOwnAllowance() async throws {
        try await withGatewaySocket(configure: {
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

    static func change(_ position: Int64) -> LiveFeed.Message {
        .change(LogPosition(transactionId: 1, position: position), frame: LiveFrame(ByteBuffer(string: "id: 1-\(position)\n\n")))
    }

    /// The output end of a test connection: what a stream writes is read back from the channel.
    final class Output: ChannelOutboundHandler, Sendable {
        typealias OutboundIn = ByteBuffer
    }

    @Test func aStreamWhoseClientStopsReadingIsClosedOnceItsConnectionIsFull() throws {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(Output())
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        let output = try channel.pipeline.syncOperations.context(handlerType: Output.self)
        let live = LiveStreamWriter(
            PreparedStream(channel: channel, output: output), resumingAfter: nil, resumeWindow: GatewayConfiguration.defaultLiveResumeEvents)
        func sent() throws -> String {
            var text = ""
            while let bytes = try channel.readOutbound(as: ByteBuffer.self) { text += String(buffer: bytes) }
            return text
        }

        live.deliver(Self.change(1))
        live.deliver(.heartbeat)
        live.deliver(Self.change(1))
        #expect(try sent() == "9\r\nid: 1-1\n\n\r\n" + "d\r\n: heartbeat\n\n\r\n", "each change once, each as one chunk")

        // The kernel holds all the client has not read, and the channel more than its high-water mark.
        channel.isWritable = false
        live.deliver(.heartbeat)
        #expect(channel.isActive, "a heartbeat is skipped, not a reason to let go")
        live.deliver(Self.change(2))
        // Closed rather than holding more: the client reconnects with the last id it got (1-1), and the
        // log gives it 1-2 and what follows.
        #expect(!channel.isActive)
        #expect(try sent() == "")
    }
}
