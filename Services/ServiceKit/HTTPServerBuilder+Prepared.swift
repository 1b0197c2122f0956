import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import PreparedHTTP
import ServerTransport

extension HTTPServerBuilder {
    /// HTTP/1.1 where the requests `prepared` takes are answered on the connection's event loop (from
    /// memory, or by a future that completes there), and every other request goes through the router as usual.
    ///
    /// The router's path costs a task, request and response objects, a conversion of every header and the
    /// middleware chain per request: several times the cost of writing a cached list, and the list of the
    /// latest pins is by far the most common request. Both paths serve the same cache and headers, so a
    /// client cannot tell them apart; `counters` tells them apart by their `door` label.
    ///
    /// `limits` bound what each connection and each client address may hold (`ConnectionGuard`).
    public static func http1(
        serverName: String, counters: RequestCounters, logger: Logger, limits: ConnectionLimits = .init(),
        prepared: @escaping PreparedAnswer
    ) -> HTTPServerBuilder {
        let perAddress = ConnectionsPerAddress(limit: limits.connectionsPerAddress)
        let handlers = preparedHandlers(
            serverName: serverName, counters: counters, logger: logger, limits: limits, perAddress: perAddress, secure: false, prepared: prepared)
        return HTTPServerBuilder { responder in
            HTTP1ServerChannel(responder: responder, handlers: handlers)
        }
    }

    /// HTTPS with `certificates`: HTTP/1.1 as `http1` serves it, the door before the router included, or
    /// HTTP/2 when the client asks for it by ALPN (answers from memory at each stream's door, every other
    /// request through the router, whose door of each prepared route answers the same). A client has
    /// `limits.headerTimeout` to finish the TLS handshake; an HTTP/2 connection with no open stream is closed
    /// after `limits.idleTimeout`.
    public static func https(
        serverName: String, counters: RequestCounters, logger: Logger, limits: ConnectionLimits = .init(), certificates: TLSCertificates,
        prepared: @escaping PreparedAnswer
    ) -> HTTPServerBuilder {
        // One count per client address for both protocols.
        let perAddress = ConnectionsPerAddress(limit: limits.connectionsPerAddress)
        let handlers = preparedHandlers(
            serverName: serverName, counters: counters, logger: logger, limits: limits, perAddress: perAddress, secure: true, prepared: prepared)
        let answered = answered(counters)
        return HTTPServerBuilder { responder in
            HTTPSServerChannel(
                responder: responder, tls: { certificates.context }, handshakeTimeout: limits.headerTimeout,
                idleTimeout: limits.idleTimeout, http1Handlers: handlers,
                http2Handlers: { [HTTP2ConnectionCount(perAddress: perAddress, trustedProxies: limits.trustedProxies, logger: logger)] },
                streamHandlers: { [HTTP2AnswerHeaders(serverName: serverName), PreparedStreamAnswers(prepared: prepared, answered: answered)] })
        }
    }

    /// Counts an answer from before the router as such.
    private static func answered(_ counters: RequestCounters) -> PreparedResponseHandler.Answered {
        { route, status, since in counters.answered(route: route, status: status, since: since, door: .prepared) }
    }

    /// An HTTP/1.1 connection's handlers after the parser: `ConnectionGuard`, then the door before the router.
    private static func preparedHandlers(
        serverName: String, counters: RequestCounters, logger: Logger, limits: ConnectionLimits, perAddress: ConnectionsPerAddress,
        secure: Bool, prepared: @escaping PreparedAnswer
    ) -> @Sendable () -> [any ChannelHandler] {
        let forwarded = limits.trustedProxies.forwardedScheme
        return {
            let guarding = ConnectionGuard(limits: limits, perAddress: perAddress, logger: logger)
            return [
                guarding,
                PreparedResponseHandler(
                    serverName: serverName, logger: logger, secure: secure, forwarded: forwarded, watcher: guarding, prepared: prepared,
                    answered: answered(counters)),
            ]
        }
    }
}
