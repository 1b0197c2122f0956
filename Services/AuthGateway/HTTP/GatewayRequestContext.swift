import Hummingbird
import NIOCore

/// The request context: Hummingbird's own, plus the client's address for login throttling.
struct GatewayRequestContext: RequestContext, RemoteAddressRequestContext {
    var coreContext: CoreRequestContextStorage
    let remoteAddress: SocketAddress?
    /// The connection's event loop: a forwarded write is answered on it.
    let eventLoop: any EventLoop
    /// Set by `RequestIDMiddleware` before any handler runs.
    var requestID = "-"

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
        eventLoop = source.channel.eventLoop
    }

    /// The client's IP address as text, without the port.
    var clientAddress: String? { remoteAddress?.ipAddress }
}
