import HTTPTypes
import Hummingbird
import NIOCore
import PreparedHTTP
import ServiceKit

/// The request context: Hummingbird's own, plus the client's address for login throttling.
struct GatewayRequestContext: RequestContext, RemoteAddressRequestContext, PreparedRequestContext {
    var coreContext: CoreRequestContextStorage
    let remoteAddress: SocketAddress?
    /// The connection's event loop: a forwarded write is answered on it, and a live stream written from it.
    let eventLoop: any EventLoop
    /// Completes when the connection closes: a live stream ends with it, at once.
    let connectionClosed: EventLoopFuture<Void>
    /// Set by `RequestIDMiddleware` before any handler runs.
    var requestID = "-"
    /// The client's IP address as text, without the port: the socket's peer, or what a trusted proxy
    /// said of it (set by `ClientAddressMiddleware` before any handler runs).
    var clientAddress: String?

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
        eventLoop = source.channel.eventLoop
        connectionClosed = source.channel.closeFuture
        clientAddress = remoteAddress?.ipAddress
    }
}

/// Works out `clientAddress`: `X-Forwarded-For` is believed only from a proxy we were told to trust.
struct ClientAddressMiddleware: RouterMiddleware {
    typealias Context = GatewayRequestContext
    let trustedProxies: TrustedProxies

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard !trustedProxies.isEmpty else { return try await next(request, context) }
        var context = context
        context.clientAddress = trustedProxies.clientAddress(
            peer: context.remoteAddress?.ipAddress,
            forwardedFor: request.headers[values: HTTPField.Name("X-Forwarded-For")!])
        return try await next(request, context)
    }
}
