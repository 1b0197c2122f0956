import Hummingbird
import HummingbirdCore
import Logging
import PreparedHTTP

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
        return HTTPServerBuilder { responder in
            HTTP1ChannelWithPreparedAnswers(responder: responder) {
                [
                    ConnectionGuard(limits: limits, perAddress: perAddress, logger: logger),
                    PreparedResponseHandler(
                        serverName: serverName, logger: logger, prepared: prepared,
                        answered: { route, status, since in counters.answered(route: route, status: status, since: since, door: .prepared) }),
                ]
            }
        }
    }
}
