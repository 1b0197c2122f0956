import Hummingbird
import NIOCore

/// The request context: Hummingbird's own, plus the client's address for login throttling.
struct GatewayRequestContext: RequestContext, RemoteAddressRequestContext {
    var coreContext: CoreRequestContextStorage
    let remoteAddress: SocketAddress?
    /// Set by `RequestIDMiddleware` before any handler runs.
    var requestID = "-"

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
    }

    /// The client's IP address as text, without the port.
    var clientAddress: String? { remoteAddress?.ipAddress }
}
