import HTTPTypes
import NIOCore
import NIOHTTP1
import PreparedHTTP

/// Sends one request to locations-service and hands back its answer: the seam between the gateway and
/// the service behind it. Its headers are `HTTPFields` both ways, as the router's and the door's are.
/// `InternalHTTPClient` sends it over kept-alive connections (and alone speaks NIO's header list, on the
/// wire); router-level tests put locations-service's own router, over pins in memory, behind it instead.
protocol LocationsHop: Sendable {
    /// The answer arrives on `eventLoop` when one is given (a client connection's, when forwarding from it).
    func execute(
        method: HTTPMethod, target: String, headers: HTTPFields, body: ByteBuffer?, timeout: TimeAmount, on eventLoop: (any EventLoop)?
    ) -> EventLoopFuture<HopAnswer>
}

/// locations-service's answer: its status, headers and whole body. The headers are read as the service sent
/// them, by name (`ParsedHeaders`): a relayed answer reads four of them, and makes no fields of the rest.
struct HopAnswer: Sendable {
    let status: Int
    let headers: ParsedHeaders
    let body: ByteBuffer
}
