import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// A loopback TCP relay between the service and PostgreSQL that a test can cut and restore, to play a
/// database outage without touching the shared test cluster.
public final class TCPProxy: Sendable {
    public let port: Int
    private let upstreamHost: String
    private let upstreamPort: Int
    private let state = NIOLockedValueBox<(server: (any Channel)?, connections: [any Channel])>((nil, []))

    public init(port: Int = freePort(), upstreamHost: String, upstreamPort: Int) {
        self.port = port
        self.upstreamHost = upstreamHost
        self.upstreamPort = upstreamPort
    }

    public func start() async throws {
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.autoRead, value: false)
            .childChannelInitializer { [self] inbound in
                self.track(inbound)
                return ClientBootstrap(group: inbound.eventLoop)
                    .channelInitializer { outbound in
                        self.track(outbound)
                        return outbound.pipeline.addHandler(RelayHandler(peer: inbound))
                    }
                    .connect(host: self.upstreamHost, port: self.upstreamPort)
                    .flatMap { outbound in
                        inbound.pipeline.addHandler(RelayHandler(peer: outbound)).flatMap {
                            inbound.setOption(.autoRead, value: true)
                        }
                    }
            }
            .bind(host: "127.0.0.1", port: port).get()
        state.withLockedValue { $0.server = server }
    }

    /// Refuses new connections and drops every open one, as a crashed database would.
    public func cut() async {
        let (server, connections) = state.withLockedValue { state in
            defer { state = (nil, []) }
            return state
        }
        try? await server?.close()
        for connection in connections { try? await connection.close() }
    }

    private func track(_ channel: any Channel) {
        state.withLockedValue { $0.connections.append(channel) }
    }
}

private final class RelayHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    let peer: any Channel

    init(peer: any Channel) { self.peer = peer }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        peer.writeAndFlush(unwrapInboundIn(data), promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        peer.close(promise: nil)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
