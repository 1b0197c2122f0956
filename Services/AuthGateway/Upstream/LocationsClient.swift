import Foundation
import HTTPTypes
import Logging
import NIOCore
import NIOHTTP1
import OnTheMapShared
import ServiceKit
import Synchronization
import Tracing

/// Calls the locations-service with the internal token. Every call has a time limit; a service that is
/// down or silent becomes `GatewayError.locationsUnavailable`, never a hang.
struct LocationsClient: Sendable {
    /// `Authorization: Bearer` and the internal token, made once: every call carries it.
    let authorization: HTTPField
    let http: any LocationsHop
    let timeout: TimeAmount
    let logger: Logger
    /// Where the change feed is read: `''` for the default map's, `/maps/{slug}` for a class map's (`on(map:)`).
    var feedPrefix = ""

    init(internalToken: String, http: any LocationsHop, timeout: TimeAmount, logger: Logger) {
        authorization = HTTPField(name: .authorization, value: "Bearer \(internalToken)")
        self.http = http
        self.timeout = timeout
        self.logger = logger
    }

    typealias Answer = HopAnswer

    /// The same client reading a class map's change feed.
    func on(map slug: MapSlug) -> LocationsClient {
        var client = self
        client.feedPrefix = Self.mapPrefix(slug)
        return client
    }

    /// The service's paths of a class map begin with this (`/maps/{slug}`); the default map's with nothing.
    static func mapPrefix(_ slug: MapSlug) -> String { "/maps/\(slug.rawValue)" }

    /// The same, for a slug as a client's path named it: one that is not a slug names no map.
    static func mapPrefix(_ slug: String?) throws(GatewayError) -> String {
        guard let slug else { return "" }
        guard let valid = MapSlug(slug) else { throw .mapNotFound }
        return mapPrefix(valid)
    }

    /// Headers passed through from the client to the service, unchanged.
    static let forwardedHeaders: [HTTPField.Name] = [.contentType, .ifMatch, .ifNoneMatch, .idempotencyKey, .userAgent]

    /// The service's path for the pin list, or for one pin, as a client named it in its path. Only a
    /// well-formed id names a pin; anything else, the service's own routes beside the pins among them
    /// (`changes`), is an unknown pin, answered without asking the service. Both doors of the gateway's pin
    /// routes call this.
    static func locationPath(_ objectId: String?) throws(GatewayError) -> String {
        guard let objectId else { return listPath }
        let id = ObjectID(objectId)
        guard id.isWellFormed else { throw .pinNotFound }
        return listPath + "/" + id.rawValue
    }

    private static let listPath = "/v1/StudentLocation"

    /// One page of the service's change feed after `position` (nil: after the head of the log as the
    /// service finds it), waiting up to `wait` for something to happen. A page whose cursor is not a
    /// position of the log is refused as the service being unavailable. Without `events`, the page lists none and only moves the cursor.
    /// Gives up at once when its task is cancelled: the live feed's long poll would otherwise hold the
    /// gateway's shutdown for up to `wait` seconds.
    /// With `classMaps`, every class map's changes (`maps=class`), each event with its map, and the maps that moved.
    func changes(
        after position: LogPosition?, wait: Int, events: Bool = true, classMaps: Bool = false, requestID: String
    ) async throws -> LocationChangePage {
        let page = changes(after: position, wait: wait, events: events, classMaps: classMaps, requestID: requestID, on: nil)
        let answer = page.eventLoop.makePromise(of: LocationChangePage.self)
        page.cascade(to: answer)
        return try await withTaskCancellationHandler {
            try await answer.futureResult.get()
        } onCancel: {
            answer.fail(CancellationError())
        }
    }

    /// `changes` on a given event loop (a live stream's, reading what its client missed).
    /// With `within`, a cursor with more events after it than that is answered with a reset page.
    func changes(
        after position: LogPosition?, wait: Int, events: Bool = true, classMaps: Bool = false, within: Int? = nil, requestID: String,
        on eventLoop: (any EventLoop)?
    ) -> EventLoopFuture<LocationChangePage> {
        var query = "after=\(position?.description ?? "now")&wait=\(wait)"
        if !events { query += "&events=false" }
        if classMaps { query += "&maps=class" }
        if let within { query += "&within=\(within)" }
        return exchange(
            method: .GET, path: feedPrefix + Self.listPath + "/changes", query: query, headers: [:], body: nil, actor: nil,
            requestID: requestID, timeout: timeout + .seconds(Int64(wait)), on: eventLoop
        ).flatMapErrorThrowing { throw unavailable($0, requestID: requestID) }.flatMapThrowing { [logger] answer in
            guard answer.status == 200, let page = try? JSONDecoder().decode(LocationChangePage.self, from: Data(answer.body.readableBytesView)),
                page.position != nil
            else {
                logger.warning("unexpected change feed answer", metadata: ["status": "\(answer.status)"])
                throw GatewayError.locationsUnavailable
            }
            return page
        }
    }

    func send(
        method: HTTPMethod, path: String, query: String?, headers: HTTPFields, body: ByteBuffer?,
        actor: Actor?, requestID: String, timeout: TimeAmount? = nil
    ) async throws -> Answer {
        do {
            return try await exchange(
                method: method, path: path, query: query, headers: headers, body: body, actor: actor,
                requestID: requestID, timeout: timeout, on: nil
            ).get()
        } catch {
            throw unavailable(error, requestID: requestID)
        }
    }

    /// The one call to the service, which `send` and the change feed make too: on a given event loop (the
    /// client connection's, when forwarding from it), the answer arrives on that loop. It fails with the hop's
    /// own error, which `unavailable(_:requestID:)` logs and says as the client is told it: the forwarded
    /// write reads the answer in a callback, without a future made only to map its failure (each costs an
    /// allocation and a release of a generic object, and that write is the gateway's busiest). The hop is
    /// traced under `context` (the task's trace when nil), and carries it to the service.
    func exchange(
        method: HTTPMethod, path: String, query: String?, headers: HTTPFields, body: ByteBuffer?,
        actor: Actor?, requestID: String, replayOnly: Bool = false, timeout: TimeAmount? = nil, on eventLoop: (any EventLoop)?,
        context: ServiceContext? = nil
    ) -> EventLoopFuture<Answer> {
        // Gathered in an array and made into fields at once, as `HTTPFields(parsed:)` does.
        var fields: [HTTPField] = []
        fields.reserveCapacity(headers.count + 4)
        for field in headers where Self.forwardedHeaders.contains(field.name) && Self.isSafeFieldValue(field.value) { fields.append(field) }
        fields.append(authorization)
        fields.append(HTTPField(name: .requestID, value: requestID))
        if let actor { fields.append(Self.header(of: actor)) }
        if replayOnly { fields.append(HTTPField(name: .replayOnly, value: "true")) }
        var outgoing = HTTPFields(fields)
        let target = path + (query.map { "?" + $0 } ?? "")
        let start = ContinuousClock.now
        let traceContext = context ?? ServiceContext.current
        let span =
            RequestTracing.traces(traceContext)
            ? RequestTracing.tracer?.startSpan("locations-service \(method.rawValue)", context: traceContext ?? .topLevel, ofKind: .client)
            : nil
        if let span {
            span.attributes["url.path"] = path
            RequestTracing.inject(span.context, into: &outgoing)
        } else if RequestTracing.enabled {
            RequestTracing.injectNotKept(into: &outgoing)
        }
        let answer = http.execute(method: method, target: target, headers: outgoing, body: body, timeout: timeout ?? self.timeout, on: eventLoop)
        // Counted and traced beside the answer rather than in a link of its own: one future fewer per call.
        answer.whenComplete { result in
            switch result {
            case .success(let answer):
                OperatorMetrics.called(.locationsService, result: .ok, since: start)
                span.map { RequestTracing.end($0, status: answer.status) }
            case .failure(let error):
                OperatorMetrics.called(.locationsService, result: .unavailable, since: start)
                span.map { RequestTracing.end($0, error: error) }
            }
        }
        return answer
    }

    /// A hop that failed, logged, as the client is told it.
    func unavailable(_ error: any Error, requestID: String) -> GatewayError {
        logger.warning("locations-service unavailable", metadata: ["error": "\(String(reflecting: error))", "request_id": "\(requestID)"])
        return .locationsUnavailable
    }

    /// `X-Actor` fields already made, by actor: the same students write again and again, and writing one
    /// (JSON, then base64url, then the field's check of its value) costs more than the rest of the hop's
    /// headers together.
    private static let actorHeaders = KeptResults<Actor, HTTPField>()

    static func header(of actor: Actor) -> HTTPField {
        actorHeaders.value(for: actor) { HTTPField(name: .actor, value: $0.headerValue) }
    }

    /// A value that stays one header field when written out again: no CR, LF, NUL or other control
    /// character (a horizontal tab aside). Whatever a client's request carried, it cannot add a header of
    /// its own to the request the service trusts.
    static func isSafeFieldValue(_ value: String) -> Bool {
        value.utf8.allSatisfy { $0 == 0x09 || ($0 >= 0x20 && $0 != 0x7F) }
    }
}
