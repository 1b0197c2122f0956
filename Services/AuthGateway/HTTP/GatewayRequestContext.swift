import HTTPTypes
import Hummingbird
import NIOCore
import PreparedHTTP
import ServiceKit

/// The request context: Hummingbird's own, plus the client's address for login throttling and whether the
/// client reached us over HTTPS.
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
    /// said of it (set by `ClientConnectionMiddleware` before any handler runs).
    var clientAddress: String?
    /// The client's connection is HTTPS: TLS to this server, or to a trusted proxy that says so in
    /// `X-Forwarded-Proto` (set by `ClientConnectionMiddleware` before any handler runs).
    var isHTTPS = false

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
        eventLoop = source.channel.eventLoop
        connectionClosed = source.channel.closeFuture
        clientAddress = remoteAddress?.ipAddress
    }
}

/// Works out who the client is and how it reached us: `clientAddress`, and `isHTTPS` (`tls`: this server
/// speaks TLS). `X-Forwarded-For` and `X-Forwarded-Proto` are believed only from a proxy we were told to
/// trust. An answer to a client on HTTPS through such a proxy gets `Strict-Transport-Security` here; on TLS
/// to this server every answer gets it on its way out (`AnswerHeaders`).
struct ClientConnectionMiddleware: RouterMiddleware {
    typealias Context = GatewayRequestContext
    let trustedProxies: TrustedProxies
    let tls: Bool

    static let forwardedFor = HTTPField.Name("X-Forwarded-For")!
    static let forwardedProto = HTTPField.Name(ForwardedScheme.header)!
    static let strictTransportSecurity = HTTPField.Name(AnswerHeaders.strictTransportSecurity.name)!

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard !trustedProxies.isEmpty else {
            guard tls else { return try await next(request, context) }
            var context = context
            context.isHTTPS = true
            return try await next(request, context)
        }
        var context = context
        let peer = context.remoteAddress?.ipAddress
        context.clientAddress = trustedProxies.clientAddress(peer: peer, forwardedFor: request.headers[values: Self.forwardedFor])
        context.isHTTPS = trustedProxies.isHTTPS(peer: peer, forwardedProto: request.headers[values: Self.forwardedProto], direct: tls)
        var response = try await next(request, context)
        if context.isHTTPS { response.headers[Self.strictTransportSecurity] = AnswerHeaders.strictTransportSecurity.value }
        return response
    }
}
