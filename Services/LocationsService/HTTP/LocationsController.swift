import Crypto
import Foundation
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
    /// Who may do what on a class map, and each map's newest pins kept ready.
    var maps: MapCommands?
    var mapLists: MapListCaches?
    /// Where a map moderator's hides and unhides are recorded once done, for a restore to do them again
    /// (nil: not recorded). The pin and the map only: the moderator is a student, kept out of the ledger.
    var ledger: RestoreLedger? = nil

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

    /// The same routes on a class map (`/maps/{slug}/v1/StudentLocation`), each for whoever may read the
    /// map (a non-member of a members-only map finds nothing, as for a map that does not exist), plus a
    /// moderator's hide and unhide.
    func addMapRoutes(to group: RouterGroup<Context>, routes: PreparedRoutes<Context>) {
        group.on(
            method: .get, routes: routes, early: { request, parameters in mapHotRead(request, parameters).map(PreparedHandling.answer) },
            use: list)
        group.post(use: create)
        group.get(":objectId", use: show)
        group.get(":objectId/history", use: history)
        group.put(":objectId", use: update)
        group.delete(":objectId", use: delete)
        group.post(":objectId/hide", use: hide)
        group.post(":objectId/unhide", use: unhide)
    }

    /// The map a request is on: the default map (`''`, no slug in its path; anyone reads it), or the class
    /// map its path names, once the caller (`X-Actor`, when signed in) may read it.
    /// A read takes the access from memory while it can be trusted; a write (`cached: false`) asks the store.
    private func scope(_ request: Request, context: Context, cached: Bool = true) async throws -> (map: String, access: MapAccess?) {
        guard let text = context.parameters.get("slug") else { return ("", nil) }
        guard let slug = MapSlug(text), let maps else { throw MapCommands.notFound }
        let actor = ActorHeader.actor(request.headers[.actor])
        return (slug.rawValue, try await maps.readable(slug, actor: actor, cached: cached))
    }

    /// The scope of a write: as `scope`, and the caller may post there.
    private func writeScope(_ request: Request, context: Context) async throws -> LocationCommands.Context {
        var writeContext = try Self.writeContext(request, context: context)
        let (map, access) = try await scope(request, context: context, cached: false)
        if let access, !access.canPost {
            throw LocationError.forbidden(
                access.map.post == .members ? "Only members of this map may post." : "Sign in to post on this map.")
        }
        writeContext.map = map
        return writeContext
    }

    /// `GET /v1/StudentLocation.geojson`: the list the same query gives, as GeoJSON (`StudentLocationList.geoJSON`),
    /// tagged by its bytes so that a map that polls it gets 304 while nothing changed.
    func addFeed(to group: RouterGroup<Context>) {
        group.get("StudentLocation.geojson", use: geoJSON)
    }

    @Sendable func geoJSON(_ request: Request, context: Context) async throws -> Response {
        // The map first: to whoever may not read it, every request is the 404 of a map that is not there.
        let (map, access) = try await scope(request, context: context)
        var query = try ListQueryParser.parse(request.uri.queryParameters, now: commands.clock.now)
        query.map = map
        let feed = CachedJSON(tagging: StudentLocationList(results: try await commands.log.pins(query)).geoJSON, contentType: Self.geoJSONType)
        return Self.kept(feed.answer(request), for: access)
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
        return list.answer(request)
    }

    /// A class map's newest pins from memory, as the default map's: when both the caller's access to the
    /// map (`X-Actor`) and the list are cached and fresh, and the caller may read it.
    private func mapHotRead(_ request: PreparedRequest, _ parameters: Parameters) -> PreparedResponse? {
        guard LatestListQuery.matches(request.query), token.admits(authorization: request.header(.authorization)),
            let slug = parameters.get("slug").flatMap(MapSlug.init), let accessCache = maps?.accessCache, let mapLists
        else { return nil }
        let actor = ActorHeader.actor(request.header(.actor))
        guard case .access(let access)? = accessCache.fresh(MapStore.cacheKey(slug, actorKey: actor?.key)), access.canRead,
            let list = mapLists.fresh(slug.rawValue)
        else { return nil }
        var answer = list.answer(request)
        if access.map.read == .members { answer.append(HTTPField(name: .cacheControl, value: "private")) }
        return answer
    }

    @Sendable func list(_ request: Request, context: Context) async throws -> Response {
        // The map first: to whoever may not read it, every request is the 404 of a map that is not there.
        let (map, access) = try await scope(request, context: context)
        var query = try ListQueryParser.parse(request.uri.queryParameters, now: commands.clock.now)
        query.map = map
        if !query.map.isEmpty, let mapLists {
            var latest = PinQuery.latest
            latest.map = query.map
            guard query == latest else { return Self.kept(.json(StudentLocationList(results: try await commands.log.pins(query)).json), for: access) }
            return Self.kept(try await mapLists.current(query.map).answer(request), for: access)
        }
        guard query == .latest else {
            return .json(StudentLocationList(results: try await commands.log.pins(query)).json)
        }
        return try await cache.current().answer(request)
    }

    @Sendable func show(_ request: Request, context: Context) async throws -> Response {
        let objectId = ObjectID(try context.parameters.require("objectId"))
        let (map, access) = try await scope(request, context: context)
        guard let pin = try await commands.pin(objectId, on: map) else { throw LocationError.notFound }
        return Self.kept(.json(pin.location.json, headers: [.eTag: ETagCondition.tag(for: pin.version)]), for: access)
    }

    /// A members-only map's pins are for its members alone: no cache shared by others keeps them
    /// (`Cache-Control: private`), and the gateway keeps its list only for the accounts it was given to.
    static func kept(_ response: Response, for access: MapAccess?) -> Response {
        guard let access, access.map.read == .members else { return response }
        var response = response
        response.headers[.cacheControl] = "private"
        return response
    }

    /// The pin's history, public as the pin is; a deleted pin's too.
    @Sendable func history(_ request: Request, context: Context) async throws -> Response {
        let objectId = ObjectID(try context.parameters.require("objectId"))
        let (map, access) = try await scope(request, context: context)
        let events = objectId.isWellFormed ? try await commands.log.stream(objectId) : []
        guard events.first?.map == map, let history = PinHistory(objectId: objectId, events: events) else {
            throw LocationError.notFound
        }
        return Self.kept(.json(history.json), for: access)
    }

    @Sendable func create(_ request: Request, context: Context) async throws -> Response {
        let body = try await Self.body(of: request)
        let input = try Self.decode(body)
        var writeContext = try await writeScope(request, context: context)
        if let key = request.headers[.idempotencyKey] {
            guard !key.isEmpty, key.utf8.count <= Self.maximumIdempotencyKeyLength else {
                throw LocationError.invalid("Idempotency-Key must be 1 to \(Self.maximumIdempotencyKeyLength) characters.")
            }
            writeContext.idempotencyKey = key
            // A class map's post is told apart by its map too: a key used on one map and again on another
            // is a different request, not a retry (the default map's hash is the body's alone, as it always was).
            var hash = SHA256()
            hash.update(data: body.readableBytesView)
            if let map = writeContext.map, !map.isEmpty { hash.update(data: Array("\u{0}map:\(map)".utf8)) }
            writeContext.requestHash = hash.finalize().hexString
        }
        let replayOnly = request.headers[.replayOnly] != nil
        let (answer, replayed) = try await commands.post(input, context: writeContext, replayOnly: replayOnly)
        return .json(answer.json, headers: replayed ? [.replayed: "true"] : [:])
    }

    @Sendable func update(_ request: Request, context: Context) async throws -> Response {
        let objectId = ObjectID(try context.parameters.require("objectId"))
        let input = try Self.decode(try await Self.body(of: request))
        let answer = try await commands.update(
            objectId, with: input, ifMatch: ETagCondition(request.headers[.ifMatch]),
            context: try await writeScope(request, context: context))
        return .json(answer.json)
    }

    @Sendable func delete(_ request: Request, context: Context) async throws -> Response {
        let objectId = ObjectID(try context.parameters.require("objectId"))
        try await commands.delete(
            objectId, ifMatch: ETagCondition(request.headers[.ifMatch]),
            context: try await writeScope(request, context: context))
        return .json(ByteBuffer(string: "{}"))
    }

    /// `POST /maps/{slug}/v1/StudentLocation/{objectId}/hide` with `{"reason"}`: a map's moderator takes a
    /// pin of that map off it (`LocationHidden`, as the operator's hide); answers the pin with the reason.
    @Sendable func hide(_ request: Request, context: Context) async throws -> Response {
        let moderation = try await moderationScope(request, context: context)
        let objectId = ObjectID(try context.parameters.require("objectId"))
        guard let reason = try ModerationBody.decode(try await Self.body(of: request)).reason,
            !reason.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty
        else { throw LocationError.invalid("reason is required: say why the pin is hidden (it is kept in the log).") }
        // A pin not on the map now may be hidden already: the hide says which (409), or that there is none (404).
        let pin = try await commands.pin(objectId, on: moderation.map)
        let hidden = try await Self.moderating { try await commands.hide(objectId, reason: reason, context: moderation) }
        guard let pin else { throw LocationError.notFound }
        ledger?.appendOrReport(
            .init(kind: .hidden, pin: objectId.description, map: moderation.map, reason: hidden.reason), undone: "show the hidden pin again",
            logger: context.logger)
        return .json(
            MapWire.hidden(HiddenPin(pin: pin.location, reason: hidden.reason, hiddenAt: hidden.hiddenAt, hiddenBy: moderation.actor.key)))
    }

    /// `POST /maps/{slug}/v1/StudentLocation/{objectId}/unhide`: the pin back on the map as it was hidden.
    @Sendable func unhide(_ request: Request, context: Context) async throws -> Response {
        let moderation = try await moderationScope(request, context: context)
        let objectId = ObjectID(try context.parameters.require("objectId"))
        _ = try ModerationBody.decode(try await Self.body(of: request))
        let location = try await Self.moderating { try await commands.unhide(objectId, context: moderation) }
        ledger?.appendOrReport(
            .init(kind: .unhidden, pin: objectId.description, map: moderation.map), undone: "hide the pin again", logger: context.logger)
        return .json(location.json)
    }

    private func moderationScope(_ request: Request, context: Context) async throws -> LocationCommands.Context {
        var moderation = try Self.writeContext(request, context: context)
        let (map, access) = try await scope(request, context: context, cached: false)
        guard let access, access.canModerate else { throw LocationError.forbidden("Only the map's moderators may hide or unhide pins.") }
        moderation.map = map
        return moderation
    }

    /// A moderation's refusal as the API tells it.
    private static func moderating<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let refusal as ModerationError {
            switch refusal {
            case .noSuchPin, .deleted: throw LocationError.notFound
            case .alreadyHidden: throw LocationError.taken("The pin is hidden already.")
            case .notHidden: throw LocationError.taken("The pin is not hidden.")
            case .invalidReason(let message): throw LocationError.invalid(message)
            }
        }
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
        guard let actor = ActorHeader.actor(request.headers[.actor]) else {
            throw .missingActor
        }
        return LocationCommands.Context(
            actor: actor,
            requestId: request.headers[.requestID],
            userAgent: request.headers[.userAgent])
    }
}

/// A moderation's body: `{"reason"}`, optional for an unhide; an empty body is no reason.
struct ModerationBody: Decodable {
    var reason: String?

    static func decode(_ body: ByteBuffer) throws(LocationError) -> ModerationBody {
        guard body.readableBytes > 0 else { return ModerationBody() }
        do {
            return try JSONDecoder().decode(ModerationBody.self, from: Data(body.readableBytesView))
        } catch {
            throw .invalid("The body must be a JSON object such as {\"reason\":\"...\"}.")
        }
    }
}
