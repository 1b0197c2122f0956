import Foundation
import TestSupport
import Testing

/// What clients see of a gateway that is stopped.
@Suite struct ShutdownTests {
    /// SIGTERM ends every open live stream before the gateway exits: one served before the router (HTTP/1.1)
    /// gets its chunked body's end, one the router serves (HTTP/1.0) the end of its connection, as a body
    /// without a length ends. Neither is cut off by the process going away, and nothing holds the exit up.
    @Test func aStoppedGatewayEndsItsLiveStreamsCleanlyBeforeItExits() async throws {
        try await withSystem { gateway, _ in
            var streams: [(minor: Int, connection: RawConnection)] = []
            for minor in [1, 0] {
                let connection = try RawConnection(port: gateway.port)
                try connection.send("GET /v1/StudentLocation/events HTTP/1.\(minor)\r\nHost: x\r\n\r\n")
                let head = try await connection.receive(until: ": connected\n\n")
                #expect(head.hasPrefix("HTTP/1.1 200 OK\r\n"), "HTTP/1.\(minor): \(head)")
                streams.append((minor, connection))
            }
            gateway.process.terminate()
            let (_, chunked) = streams[0]
            let end = try await chunked.receive(until: "0\r\n\r\n")
            #expect(end.hasSuffix("0\r\n\r\n"), "the stream's last chunk: \(end)")
            for (minor, connection) in streams {
                let closed = await connection.closedByPeer(within: .seconds(5))
                #expect(closed != nil, "HTTP/1.\(minor): the gateway closes the connection")
            }
            // It took 21 ms here; a live feed that waited out its long poll to locations-service took 4.9 s.
            #expect(await gateway.waitForExit(timeout: .seconds(3)) == 0, "\(gateway.output)")
        }
    }
}
