import HTTPTypes
import NIOCore
import NIOHTTP1
import PreparedHTTP

/// Sends one request to locations-service and hands back its answer: the seam between the gateway and
/// the service behind it. A request's headers are `HTTPFields`, as the router's and the door's are; an
/// answer's are read by name (`ParsedHeaders`). `InternalHTTPClient` sends it over kept-alive connections
/// (writing the request's bytes itself, reading the answer with NIO's parser); router-level tests put
/// locations-service's own router, over pins in memory, behind it instead.
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
