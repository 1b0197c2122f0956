import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NIOHTTP1
import OnTheMapShared
import PreparedHTTP
import ServiceKit

/// Class maps at the gateway. Under `/maps/{slug}/` a map has the default map's routes (the pin list on
/// the v1 and legacy Parse paths, one pin, its history, GeoJSON, the live stream), so an app joins a class
/// by its base URL alone; reads carry the session's account, when there is one, for the service to decide
/// who may read (a map the caller may not read is 404, as one that does not exist). `/v1/maps` is the API
/// that creates and runs maps, passed to the service as the session's account.
struct MapsProxyController: Sendable {
    let locations: LocationsClient
    let writes: LocationWriteForwarder
    let sessions: Sessions
    let limit: WriteLimit
    let trustedProxies: TrustedProxies
    let siteDomain: CookieDomain?
    let creators: MapCreators?
    let feeds: MapFeeds
    let resumeWindow: Int

    /// The map routes beside the default map's own, and the map API.
    func addRoutes(to router: Router<GatewayRequestContext>, routes prepared: PreparedRoutes<GatewayRequestContext>) {
        for (path, legacy) in LocationsProxyController.mounts {
            let group = prepared.group(RouterPath("/maps/:slug" + path)).add(middleware: GatewayErrorMiddleware(style: .parse))
            group.on(
                method: .get, routes: prepared, early: { request, parameters in cachedList(request, parameters).map(PreparedHandling.answer) },
                use: list)
            group.on(method: .post, routes: prepared) { request, parameters in
                writes.handling(request, objectId: nil, legacyParse: legacy, map: parameters.get("slug"))
            }
            group.get(":objectId") { request, context in
                try await read(request, context: context, objectId: context.parameters.get("objectId"))
            }
            for method in [HTTPRequest.Method.put, .delete] {
                group.on(":objectId", method: method, routes: prepared) { request, parameters in
                    writes.handling(request, objectId: parameters.get("objectId"), legacyParse: legacy, map: parameters.get("slug"))
                }
            }
            guard !legacy else { continue }
            group.get(":objectId/history") { request, context in
                try await read(request, context: context, objectId: context.parameters.get("objectId"), suffix: "/history")
            }
            for action in ["hide", "unhide"] {
                group.post(RouterPath(":objectId/\(action)")) { request, context in
                    let objectId = try LocationsClient.locationPath(context.parameters.get("objectId"))
                    return try await act(request, context: context, path: try Self.mapPrefix(context) + objectId + "/" + action)
                }
            }
        }
        router.group("maps/:slug/v1").add(middleware: CrossOriginMiddleware()).add(middleware: GatewayErrorMiddleware(style: .parse))
            .get("StudentLocation.geojson") { request, context in
                try await read(
                    request, context: context, objectId: nil, query: try LocationsProxyController.listQuery(request.uri.query), suffix: ".geojson")
            }
            .on("StudentLocation.geojson", method: .options) { _, context in
                _ = try Self.mapPrefix(context)
                return LocationsProxyController.preflightAnswer
            }
        router.group("maps/:slug/v1/StudentLocation").add(middleware: GatewayErrorMiddleware(style: .parse))
            .get("events") { request, context in try await liveStream(request, context: context) }

        let api = router.group("v1/maps").add(middleware: GatewayErrorMiddleware(style: .parse))
        api.post { request, context in try await act(request, context: context, path: "/v1/maps", creating: true) }
        api.get { request, context in try await act(request, context: context, path: "/v1/maps") }
        for (route, methods) in Self.apiRoutes {
            for method in methods {
                api.on(RouterPath(route), method: method) { request, context in
                    // The service is asked at the route's own path, made from its parameters (not the client's
                    // spelling of it, which may end in a slash the router ignores), and the route alone says
                    // what the request is.
                    try await act(
                        request, context: context, path: try Self.servicePath(route, context.parameters),
                        signedIn: !(method == .get && route == ":slug"),
                        joining: method == .post && route == ":slug/members", inviting: route == ":slug/invites")
                }
            }
        }
    }

    /// Where paths are the maps' and their API's: every error below them is Parse's `{code, error}`.
    static let roots = ["/maps", "/v1/maps"]

    /// A route of the map API as the service has it: `/v1/maps/` and the route with its parameters in place,
    /// each percent-encoded again as a path segment.
    static func servicePath(_ route: String, _ parameters: Parameters) throws -> String {
        var path = "/v1/maps"
        for segment in route.split(separator: "/") {
            guard segment.hasPrefix(":") else {
                path += "/" + segment
                continue
            }
            let value = try parameters.require(String(segment.dropFirst()))
            guard let encoded = value.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(["/"])), !encoded.isEmpty else {
                throw GatewayError.mapNotFound
            }
            path += "/" + encoded
        }
        return path
    }

    /// The map API's routes below `/v1/maps`, as the service has them.
    static let apiRoutes: [(String, [HTTPRequest.Method])] = [
        (":slug", [.get, .patch, .delete]),
        (":slug/members", [.get, .post]),
        (":slug/members/:key", [.delete]),
        (":slug/members/:key/role", [.put]),
        (":slug/invites", [.get, .post]),
        (":slug/invites/:code", [.delete]),
        (":slug/hidden", [.get]),
    ]

    static let maximumBodySize = 4 * 1024

    /// A class map's list from the gateway's copy, for a caller it may be given to: anyone for a public map;
    /// for a members-only one, an account it was given to already, as its session says (read from this
    /// replica's cache, without leaving the event loop).
    private func cachedList(_ request: PreparedRequest, _ parameters: Parameters) -> PreparedResponse? {
        guard LatestListQuery.matches(request.query), let slug = parameters.get("slug") else { return nil }
        let list = feeds.lists.list(for: slug) {
            guard let token = SessionCookies.token(in: request), case .live(let account) = sessions.cachedLookup(token) else { return nil }
            return account.key
        }
        guard let list else { return nil }
        var answer = list.answer(request)
        answer.append(.requestID, legalValue: RequestIDMiddleware.resolve(request.header(.requestID)))
        return answer
    }

    /// A class map's list through the router: the newest 100 kept when they come back, for whoever the
    /// service says may have them (a members-only map's answer is `Cache-Control: private`: this account's).
    @Sendable private func list(_ request: Request, context: GatewayRequestContext) async throws -> Response {
        let query = try LocationsProxyController.listQuery(request.uri.query)
        guard let slug = MapSlug(try context.parameters.require("slug")), LatestListQuery.matches(query.map { Substring($0) }) else {
            return try await read(request, context: context, objectId: nil, query: query)
        }
        let account = try await account(request)
        let stamp = feeds.lists.stamp(for: slug)
        let answer = try await locations.send(
            method: .GET, path: LocationsClient.mapPrefix(slug) + (try LocationsClient.locationPath(nil)), query: query,
            headers: request.headers, body: nil, actor: account?.actor, requestID: context.requestID)
        if answer.status == 200, let etag = answer.headers[.eTag] {
            let isPrivate = answer.headers[.cacheControl]?.contains("private") ?? false
            let readers: ClassMapLists.Readers? = isPrivate ? account.map { .accounts([$0.key]) } : .anyone
            if let readers { feeds.lists.store(CachedJSON(body: answer.body, etag: etag), for: slug, readers: readers, fetchedAt: stamp) }
        }
        return LocationWriteForwarder.relay(answer, status: .init(code: answer.status), requestID: context.requestID).response
    }

    /// A read of a class map's pins, as the session's account (or no one).
    private func read(
        _ request: Request, context: GatewayRequestContext, objectId: String?, query: String? = nil, suffix: String = ""
    ) async throws -> Response {
        let path = try Self.mapPrefix(context) + LocationsClient.locationPath(objectId) + suffix
        let answer = try await locations.send(
            method: .GET, path: path, query: query, headers: request.headers, body: nil,
            actor: try await account(request)?.actor, requestID: context.requestID)
        return LocationWriteForwarder.relay(answer, status: .init(code: answer.status), requestID: context.requestID).response
    }

    /// A request of the map API or a moderator's action: it needs a session (but for reading one map,
    /// `signedIn: false`), a change is refused from other sites' pages (and counted against the write limit,
    /// as a join), and it reaches the service as the session's account.
    private func act(
        _ request: Request, context: GatewayRequestContext, path: String, signedIn: Bool = true, creating: Bool = false,
        joining: Bool = false, inviting: Bool = false
    ) async throws -> Response {
        let prepared = PreparedRequest(request)
        let headers = prepared.headers
        let changes = request.method != .get
        if changes, OriginCheck.isCrossSite(prepared, siteDomain: siteDomain) { throw GatewayError.crossOrigin }
        let account = try await account(request)
        guard account != nil || !signedIn else { throw GatewayError.notLoggedInForMaps }
        if creating, let creators, let account, !creators.admits(account) { throw GatewayError.mapCreationRestricted }
        var body: ByteBuffer?
        if changes {
            do {
                body = try await request.body.collect(upTo: Self.maximumBodySize)
            } catch is NIOTooManyBytesError {
                throw GatewayError.bodyTooLarge(limit: Self.maximumBodySize)
            }
            // A join is counted against its account's writes on the map it joins: a stream of guessed invites
            // is slowed as a stream of pins is, and slows that account's pins there. (Not against its address:
            // a class joins from one school's address at once.)
            if let account, joining {
                let map = context.parameters.get("slug").flatMap(MapSlug.init)
                if case .wait(let seconds) = try await limit.take(limit.subjects(account: account.key, address: nil, map: map)) {
                    throw GatewayError.rateLimited(retryAfter: seconds)
                }
            }
        }
        let answer = try await locations.send(
            method: HTTPMethod(rawValue: request.method.rawValue), path: path, query: nil, headers: headers, body: body,
            actor: account?.actor, requestID: context.requestID)
        // A change to the map shows at once on this replica: its list and who may read it are asked again.
        if changes, (200..<300).contains(answer.status), let slug = context.parameters.get("slug").flatMap(MapSlug.init) {
            feeds.lists.invalidate(slug)
        }
        var relayed = answer
        if inviting, (200..<300).contains(answer.status) {
            relayed = HopAnswer(
                status: answer.status, headers: answer.headers,
                body: Self.absoluteInviteURLs(answer.body, origin: Self.origin(of: request, context: context)))
        }
        return LocationWriteForwarder.relay(relayed, status: .init(code: answer.status), requestID: context.requestID).response
    }

    /// `GET /maps/{slug}/v1/StudentLocation/events`: the map's live stream, as the default map's (resumable,
    /// with the same limits), once the service says the caller may read the map; 404 otherwise, before
    /// anything is streamed. Served through the router, which can wait for that answer.
    private func liveStream(_ request: Request, context: GatewayRequestContext) async throws -> Response {
        guard let slug = MapSlug(try context.parameters.require("slug")) else { throw GatewayError.mapNotFound }
        let access = try await locations.send(
            method: .GET, path: "/v1/maps/\(slug.rawValue)/access", query: nil, headers: [:], body: nil,
            actor: try await account(request)?.actor, requestID: context.requestID)
        guard access.status == 200 else {
            return LocationWriteForwarder.relay(access, status: .init(code: access.status), requestID: context.requestID).response
        }
        let events = EventsController(
            feed: feeds.listeners(of: slug), locations: locations.on(map: slug), trustedProxies: trustedProxies, resumeWindow: resumeWindow)
        guard case .stream(let opening) = events.stream(PreparedRequest(request, peer: context.remoteAddress)) else {
            throw GatewayError.internalFailure
        }
        return try await PreparedStream.routed(
            opening, on: context.eventLoop, remoteAddress: context.remoteAddress, connectionClosed: context.connectionClosed)
    }

    /// The session's account, when the request carries a live session; nil otherwise.
    private func account(_ request: Request) async throws -> Account? {
        guard let token = SessionCookies.token(in: request.headers) else { return nil }
        return try await sessions.account(for: token)
    }

    private static func mapPrefix(_ context: GatewayRequestContext) throws -> String {
        try LocationsClient.mapPrefix(context.parameters.get("slug"))
    }

    /// Where the client reached this gateway: its scheme and `Host`.
    static func origin(of request: Request, context: GatewayRequestContext) -> String {
        let host = request.head.authority ?? request.headers[HTTPField.Name("Host")!] ?? "localhost"
        return "\(context.isHTTPS ? "https" : "http")://\(host)"
    }

    /// The service names an invite's page by its path; a guest needs the whole address, to open or to scan.
    static func absoluteInviteURLs(_ body: ByteBuffer, origin: String) -> ByteBuffer {
        guard LocationsClient.isSafeFieldValue(origin), !origin.contains("\""), !origin.contains("\\") else { return body }
        let text = String(buffer: body).replacingOccurrences(of: #""url":"/maps/"#, with: #""url":"\#(origin)/maps/"#)
        return ByteBuffer(string: text)
    }
}

/// The session and users routes under a class map's base URL answer for a slug as a path spells one
/// (`MapSlug`), whether or not a map has it (logging in tells nothing of the maps); any other spelling names
/// no map, and is 404 as everywhere under `/maps/`.
struct MapSlugMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if let slug = context.parameters.get("slug"), MapSlug(slug) == nil { throw GatewayError.mapNotFound }
        return try await next(request, context)
    }
}
