import Crypto
import HTTPTypes
import Hummingbird
import NIOCore
import OnTheMapShared
import PreparedHTTP
import ServiceKit

/// The StudentLocation routes, in the contract's shapes. Requests reach here only with the internal token.
/// The default list, the hot read, is answered before the router too while the cache is ready
/// (`PreparedRoutes`), from the same declaration.
struct LocationsController<Context: RequestContext>: Sendable {
    let commands: LocationCommands
    let cache: LatestLocationsCache
    let token: InternalToken

    static var maximumBodySize: Int { 16 * 1024 }
    static var maximumIdempotencyKeyLength: Int { 255 }

    func addRoutes(to group: RouterGroup<Context>, routes: PreparedRoutes<Context>) {
        group.on(method: .get, routes: routes, early: { request, _ in hotRead(request).map(PreparedHandling.answer) }, use: list)
        group.post(use: create)
        group.get(":objectId", use: show)
        group.get(":objectId/history", use: history)
        group.put(":objectId", use: update)
        group.delete(":objectId", use: delete)
    }

    /// `GET /v1/StudentLocation.geojson`: the list the same query gives, as GeoJSON (`StudentLocationList.geoJSON`),
    /// tagged by its bytes so that a map that polls it gets 304 while nothing changed.
    func addFeed(to group: RouterGroup<Context>) {
        group.get("StudentLocation.geojson", use: geoJSON)
    }

    @Sendable func geoJSON(_ request: Request, context: Context) async throws -> Response {
        let query = try ListQueryParser.parse(request.uri.queryParameters)
        let feed = CachedJSON(tagging: StudentLocationList(results: try await commands.log.pins(query)).geoJSON, contentType: Self.geoJSONType)
        return feed.answer(ifNoneMatch: request.headers[.ifNoneMatch]).response
    }

    static var geoJSONType: String { "application/geo+json" }

    /// `POST /v1/erasures`: the acting student (`X-Actor`) erased from the log, past and present; answers
    /// `{"pins":N}`, the pins erased (0 when done before).
    func addErasure(to group: RouterGroup<Context>) {
        group.post("erasures", use: erase)
    }

    @Sendable func erase(_ request: Request, context: Context) async throws -> Response {
        let pins = try await commands.erase(context: try Self.writeContext(request, context: context))
        return .json(ByteBuffer(string: #"{"pins":\#(pins)}"#))
    }

    /// The default list from the cache while it is ready; the common spellings of the default list only,
    /// rarer ones take `list` to the same cache. The token is checked here too: before the router, no
    /// middleware has.
    private func hotRead(_ request: PreparedRequest) -> PreparedResponse? {
        guard LatestListQuery.matches(request.query), token.admits(authorization: request.header(.authorization)), let list = cache.ready
        else { return nil }
        return list.answer(ifNoneMatch: request.header(.ifNoneMatch))
    }

    @Sendable func list(_ request: Request, context: Context) async throws -> Response {
        let query = try ListQueryParser.parse(request.uri.queryParameters)
        guard query == .latest else {
            return .json(StudentLocationList(results: try await commands.log.pins(query)).json)
        }
        return try await cache.current().answer(ifNoneMatch: request.headers[.ifNoneMatch]).response
    }

    @Sendable func show(_ request: Request, context: Context) async throws -> Response {
        let objectId = ObjectID(try context.parameters.require("objectId"))
        guard objectId.isWellFormed, let pin = try await commands.log.pin(objectId) else { throw LocationError.notFound }
        return .json(pin.location.json, headers: [.eTag: ETagCondition.tag(for: pin.version)])
    }

    /// The pin's history, public as the pin is; a deleted pin's too.
    @Sendable func history(_ request: Request, context: Context) async throws -> Response {
        let objectId = ObjectID(try context.parameters.require("objectId"))
        guard objectId.isWellFormed, let history = PinHistory(objectId: objectId, events: try await commands.log.stream(objectId)) else {
            throw LocationError.notFound
        }
        return .json(history.json)
    }

    @Sendable func create(_ request: Request, context: Context) async throws -> Response {
        let body = try await Self.body(of: request)
        let input = try Self.decode(body)
        var writeContext = try Self.writeContext(request, context: context)
        if let key = request.headers[HTTPField.Name(InternalHeaders.idempotencyKey)!] {
            guard !key.isEmpty, key.utf8.count <= Self.maximumIdempotencyKeyLength else {
                throw LocationError.invalid("Idempotency-Key must be 1 to \(Self.maximumIdempotencyKeyLength) characters.")
            }
            writeContext.idempotencyKey = key
            writeContext.requestHash = SHA256.hash(data: body.readableBytesView).hexString
        }
        let replayOnly = request.headers[HTTPField.Name(InternalHeaders.replayOnly)!] != nil
        let (answer, replayed) = try await commands.post(input, context: writeContext, replayOnly: replayOnly)
        return .json(answer.json, headers: replayed ? [HTTPField.Name(InternalHeaders.replayed)!: "true"] : [:])
    }

    @Sendable func update(_ request: Request, context: Context) async throws -> Response {
        let objectId = ObjectID(try context.parameters.require("objectId"))
        let input = try Self.decode(try await Self.body(of: request))
        let answer = try await commands.update(
            objectId, with: input, ifMatch: ETagCondition(request.headers[.ifMatch]),
            context: try Self.writeContext(request, context: context))
        return .json(answer.json)
    }

    @Sendable func delete(_ request: Request, context: Context) async throws -> Response {
        let objectId = ObjectID(try context.parameters.require("objectId"))
        try await commands.delete(
            objectId, ifMatch: ETagCondition(request.headers[.ifMatch]),
            context: try Self.writeContext(request, context: context))
        return .json(ByteBuffer(string: "{}"))
    }

    private static func body(of request: Request) async throws -> ByteBuffer {
        do {
            return try await request.body.collect(upTo: maximumBodySize)
        } catch is NIOTooManyBytesError {
            throw LocationError.bodyTooLarge(limit: maximumBodySize)
        } catch let error as HTTPError where error.status == .contentTooLarge {
            throw LocationError.bodyTooLarge(limit: maximumBodySize)
        }
    }

    private static func decode(_ body: ByteBuffer) throws(LocationError) -> LocationInput {
        do {
            return try LocationInput.decode(body.readableBytesView)
        } catch {
            throw .unreadableBody(error)
        }
    }

    private static func writeContext(_ request: Request, context: Context) throws(LocationError) -> LocationCommands.Context {
        guard let header = request.headers[HTTPField.Name(InternalHeaders.actor)!], let actor = Actor(headerValue: header) else {
            throw .missingActor
        }
        return LocationCommands.Context(
            actor: actor,
            requestId: request.headers[HTTPField.Name(InternalHeaders.requestID)!],
            userAgent: request.headers[.userAgent])
    }
}
