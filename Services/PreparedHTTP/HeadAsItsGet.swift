import HTTPTypes
import Hummingbird

/// A HEAD is answered as the GET of the same target would be, without the body (RFC 9110 §9.3.2): asked of
/// the router as that GET, its answer's head goes out alone, with the GET's status, length and validators
/// (the connection's handlers leave the body off: `PreparedResponseHandler` over HTTP/1.1,
/// `HTTP2AnswerHeaders` over HTTP/2). Its route, counters and access line are the GET's. A HEAD for a live
/// stream gets the stream's head, and no stream is opened for it (`PreparedRouteResponder`).
///
/// The door before the router takes no HEAD: it reaches the router, where a HEAD is rare enough to be
/// answered at the router's pace.
struct HeadAsItsGet<Responder: HTTPResponder>: HTTPResponder {
    typealias Context = Responder.Context
    let responder: Responder

    func respond(to request: Request, context: Context) async throws -> Response {
        guard request.method == .head else { return try await responder.respond(to: request, context: context) }
        var head = request.head
        head.method = .get
        return try await HeadRequest.$isAsked.withValue(true) {
            try await responder.respond(to: Request(head: head, body: request.body), context: context)
        }
    }
}

/// Whether the request being answered is a HEAD asked as its GET (`HeadAsItsGet`).
enum HeadRequest {
    @TaskLocal static var isAsked = false
}

extension PreparedRoutes {
    /// What the application serves: the router, with a HEAD answered as its GET (`HeadAsItsGet`).
    public func responder() -> some HTTPResponder<Context> {
        HeadAsItsGet(responder: router.buildResponder())
    }
}
