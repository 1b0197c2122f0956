import HTTPTypes
import Hummingbird
import HummingbirdCore
import NIOCore
import OnTheMapShared
import PreparedHTTP
import ServiceKit

/// `GET /v1/StudentLocation/events`: pin changes as Server-Sent Events. Each event's `id` is a log cursor;
/// a client that reconnects with `Last-Event-ID` (or `?lastEventId=`) first gets what it missed, read from
/// the log, then the live stream, with nothing repeated; one that missed more than the resume window gets
/// one `reset` event (reload the pins) and then the live stream.
///
/// One declaration gives both doors (`PreparedRoutes`): before the router for keep-alive HTTP/1.1, which is
/// every EventSource, the stream is written to its connection on its event loop; through the router (an
/// HTTP/1.0 client's, say) the same stream is the response body.
struct EventsController: Sendable {
    let feed: any LiveSubscriptions
    let locations: LocationsClient
    let trustedProxies: TrustedProxies
    /// `GatewayConfiguration.liveResumeEvents`.
    let resumeWindow: Int

    static let lastEventID = HTTPField.Name("Last-Event-ID")!

    /// The head's headers, but for the request id.
    static let headers: HTTPFields = [.contentType: "text/event-stream", .cacheControl: "no-cache", HTTPField.Name("X-Accel-Buffering")!: "no"]

    /// Where a client resumes: the id it last got, from the header or, for a client that cannot set
    /// headers, the query.
    static func resumePoint(header: String?, uri: URI) -> LogPosition? {
        (header ?? uri.queryParameters["lastEventId"].map(String.init)).flatMap(LogPosition.init)
    }

    func addRoutes(to group: RouterGroup<GatewayRequestContext>, routes: PreparedRoutes<GatewayRequestContext>) {
        group.on("events", method: .get, routes: routes) { request, _ in stream(request) }
    }

    /// The stream, once the feed admits it: the client's address is the connection's peer, or what a
    /// trusted proxy in front of it says.
    func stream(_ request: PreparedRequest) -> PreparedHandling {
        let requestID = RequestIDMiddleware.resolve(request.header(.requestID))
        let resumeFrom = Self.resumePoint(header: request.header(Self.lastEventID), uri: URI(request.target))
        let forwardedFor = request.header(TrustedProxies.forwardedFor).map { [$0] } ?? []
        var headers = Self.headers
        headers[.requestID] = requestID
        return .stream(
            PreparedStreamOpening(headers: headers) { [feed, locations, trustedProxies, resumeWindow] stream in
                let address = trustedProxies.clientAddress(peer: stream.remoteAddress?.ipAddress, forwardedFor: forwardedFor)
                let live = LiveStreamWriter(stream, resumingAfter: resumeFrom, resumeWindow: resumeWindow)
                // Subscribed before the log is read for what the client missed, so nothing falls between the two.
                guard let id = feed.subscribe(live, address: address, on: stream.eventLoop) else {
                    return .refused(ParseWire.refusal(.tooManyStreams(limit: feed.streamsPerAddress), requestID: requestID))
                }
                // A client that leaves is let go at once, not when the next heartbeat fails to reach it.
                stream.closeFuture.whenComplete { _ in feed.unsubscribe(id, on: stream.eventLoop) }
                return .admitted { live.start(locations: locations, requestID: requestID) }
            })
    }
}
