import HTTPTypes
import Hummingbird
import HummingbirdCore
import NIOCore
import OnTheMapShared
import PreparedHTTP
import ServiceKit
import ServiceLifecycle

/// `GET /v1/StudentLocation/events`: pin changes as Server-Sent Events. Each event's `id` is a log cursor;
/// a client that reconnects with `Last-Event-ID` (or `?lastEventId=`) first gets what it missed, read from
/// the log, then the live stream, with nothing repeated.
///
/// Two doors, as for the writes: before the router (`handling`) for keep-alive HTTP/1.1, which is every
/// EventSource, where a stream is written to its connection on its event loop; and the router for the rest.
struct EventsController: Sendable {
    let feed: LiveFeed
    let locations: LocationsClient
    let trustedProxies: TrustedProxies

    static let path = "/v1/StudentLocation/events"
    static let lastEventID = HTTPField.Name("Last-Event-ID")!

    /// The head's headers (the router's door adds the request id itself).
    static let headers: HTTPFields = [.contentType: "text/event-stream", .cacheControl: "no-cache", HTTPField.Name("X-Accel-Buffering")!: "no"]

    /// Where a client resumes: the id it last got, from the header or, for a client that cannot set
    /// headers, the query.
    static func resumePoint(header: String?, uri: URI) -> LogPosition? {
        (header ?? uri.queryParameters["lastEventId"].map(String.init)).flatMap(LogPosition.init)
    }

    /// The door before the router.
    func handling(_ request: PreparedRequest) -> PreparedHandling? {
        guard request.method == .GET, request.path == Self.path else { return nil }
        let requestID = RequestIDMiddleware.resolve(request.header(.requestID))
        let resumeFrom = Self.resumePoint(header: request.header(Self.lastEventID), uri: URI(request.target))
        let forwardedFor = request.headers["X-Forwarded-For"]
        var headers = Self.headers
        headers[.requestID] = requestID
        return .stream(
            PreparedStreamOpening(headers: headers) { [feed, locations, trustedProxies] stream in
                let peer = stream.remoteAddress?.ipAddress
                let address = trustedProxies.isEmpty ? peer : trustedProxies.clientAddress(peer: peer, forwardedFor: forwardedFor)
                let live = ChannelLiveStream(stream, resumingAfter: resumeFrom)
                // Subscribed before the log is read for what the client missed, so nothing falls between the two.
                guard let id = feed.subscribe(live, address: address, on: stream.eventLoop) else {
                    return .refused(ParseWire.refusal(.tooManyStreams(limit: feed.streamsPerAddress), requestID: requestID))
                }
                // A client that leaves is let go at once, not when the next heartbeat fails to reach it.
                stream.closeFuture.whenComplete { _ in feed.unsubscribe(id, on: stream.eventLoop) }
                return .admitted { live.start(locations: locations, requestID: requestID) }
            })
    }

    func addRoutes(to group: RouterGroup<GatewayRequestContext>) {
        group.get("events", use: events)
    }

    /// The router's door.
    @Sendable func events(_ request: Request, context: GatewayRequestContext) async throws -> Response {
        let resumeFrom = Self.resumePoint(header: request.headers[Self.lastEventID], uri: request.uri)
        let queue = QueuedLiveStream()
        let loop = context.eventLoop
        // Subscribe before reading the backlog, so nothing falls between the two.
        guard let id = feed.subscribe(queue, address: context.clientAddress, on: loop) else {
            throw GatewayError.tooManyStreams(limit: feed.streamsPerAddress)
        }
        queue.whenEnded { [feed] in feed.unsubscribe(id, on: loop) }
        // A client that leaves is let go at once, not when the next heartbeat fails to reach it.
        context.connectionClosed.whenComplete { _ in queue.end() }
        let requestID = context.requestID
        return Response(
            status: .ok, headers: Self.headers,
            body: ResponseBody { [feed, locations] writer in
                defer { feed.unsubscribe(id, on: loop) }
                try await writer.write(SSEFrame.opening)
                var last = resumeFrom
                if let start = resumeFrom {
                    var cursor = start.description
                    while true {
                        let page = try await locations.changes(after: cursor, wait: 0, requestID: requestID)
                        for event in page.events { try await writer.write(SSEFrame.event(event)) }
                        if let position = page.events.last.flatMap({ LogPosition($0.id) }) { last = position }
                        if page.events.isEmpty { break }
                        cursor = page.cursor
                    }
                }
                // Live streams end when the gateway shuts down, so they do not hold up the drain.
                await withGracefulShutdownHandler {
                    for await message in queue.messages {
                        switch message {
                        case .heartbeat:
                            guard (try? await writer.write(SSEFrame.heartbeat)) != nil else { return }
                        case .change(let position, let frame):
                            if let last, position <= last { continue }
                            last = position
                            guard (try? await writer.write(frame.text)) != nil else { return }
                        }
                    }
                } onGracefulShutdown: {
                    queue.end()
                }
                try await writer.finish(nil)
            })
    }
}
