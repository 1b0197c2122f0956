import HTTPTypes
import Hummingbird
import NIOCore
import OnTheMapShared
import ServiceLifecycle

/// `GET /v1/StudentLocation/events`: pin changes as Server-Sent Events. Each event's `id` is a log cursor;
/// a client that reconnects with `Last-Event-ID` first gets what it missed (read from the log), then the
/// live stream, with nothing repeated.
struct EventsController: Sendable {
    let feed: LiveFeed
    let locations: LocationsClient

    func addRoutes(to group: RouterGroup<GatewayRequestContext>) {
        group.get("events", use: events)
    }

    @Sendable func events(_ request: Request, context: GatewayRequestContext) async throws -> Response {
        let resumeFrom = (request.headers[HTTPField.Name("Last-Event-ID")!] ?? request.uri.queryParameters["lastEventId"].map(String.init))
            .flatMap(LogPosition.init)
        // Subscribe before reading the backlog, so nothing falls between the two.
        guard let (id, messages) = feed.subscribe(address: context.clientAddress) else {
            throw GatewayError.tooManyStreams(limit: feed.streamsPerAddress)
        }
        // A client that leaves is let go at once, not when the next heartbeat fails to reach it.
        context.connectionClosed.whenComplete { _ in feed.end(id) }
        let requestID = context.requestID
        let headers: HTTPFields = [.contentType: "text/event-stream", .cacheControl: "no-cache", HTTPField.Name("X-Accel-Buffering")!: "no"]
        return Response(
            status: .ok, headers: headers,
            body: ResponseBody { [feed, locations] writer in
                defer { feed.unsubscribe(id) }
                try await writer.write(ByteBuffer(string: "retry: 3000\n: connected\n\n"))
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
                    for await message in messages {
                        switch message {
                        case .heartbeat:
                            guard (try? await writer.write(SSEFrame.heartbeat)) != nil else { return }
                        case .change(let position, let frame):
                            if let last, position <= last { continue }
                            last = position
                            guard (try? await writer.write(frame)) != nil else { return }
                        }
                    }
                } onGracefulShutdown: {
                    feed.end(id)
                }
                try await writer.finish(nil)
            })
    }
}
