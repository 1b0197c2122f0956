import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NIOHTTP1
import OnTheMapShared
import PreparedHTTP
import ServiceKit

/// The StudentLocation routes, under `/v1` and the legacy Parse paths: reads pass through (the default list
/// from the gateway's copy when it can be trusted), carrying only what the public API documents; writes go
/// to `LocationWriteForwarder`. The default list and the writes are answered before the router too
/// (`PreparedRoutes`), from the same declarations.
struct LocationsProxyController: Sendable {
    let locations: LocationsClient
    let writes: LocationWriteForwarder
    let latest: LatestListCache

    /// Where the routes are mounted: v1, and the legacy Parse paths (`true`).
    static let mounts = [("/v1/StudentLocation", false), ("/parse/classes/StudentLocation", true), ("/1/classes/StudentLocation", true)]
    /// The roots of the Parse API the legacy mounts are under (`/parse`, `/1`): every path below one is Parse's.
    static let parseRoots = mounts.filter(\.1).compactMap { mount in mount.0.split(separator: "/").first.map { "/\($0)" } }

    func addRoutes(to group: RouterGroup<GatewayRequestContext>, routes: PreparedRoutes<GatewayRequestContext>, legacyParse: Bool) {
        group.on(method: .get, routes: routes, early: { request, _ in cachedList(request).map(PreparedHandling.answer) }, use: list)
        group.on(method: .post, routes: routes) { request, _ in
            writes.handling(request, objectId: nil, legacyParse: legacyParse)
        }
        group.get(":objectId") { request, context in
            try await read(request, context: context, objectId: context.parameters.get("objectId"))
        }
        if !legacyParse {
            group.get(":objectId/history") { request, context in
                try await read(request, context: context, objectId: context.parameters.get("objectId"), suffix: "/history")
            }
        }
        for method in [HTTPRequest.Method.put, .delete] {
            group.on(":objectId", method: method, routes: routes) { request, parameters in
                writes.handling(request, objectId: parameters.get("objectId"), legacyParse: legacyParse)
            }
        }
    }

    /// `GET /v1/StudentLocation.geojson`, public like the list and readable from any origin
    /// (`CrossOriginMiddleware`), so that a map on another site (uMap's remote data, a QGIS layer, a page's
    /// fetch) can show the pins: the list's query is forwarded as for the list, and the service's GeoJSON
    /// and its tag come back. A browser's preflight (`OPTIONS`, sent before a fetch with headers of its
    /// own) is answered too.
    func addFeed(to group: RouterGroup<GatewayRequestContext>) {
        group.get("StudentLocation.geojson") { request, context in
            try await read(request, context: context, objectId: nil, query: try Self.listQuery(request.uri.query), suffix: ".geojson")
        }
        group.on("StudentLocation.geojson", method: .options) { _, _ in Self.preflightAnswer }
    }

    /// A browser's preflight before it fetches the GeoJSON with headers of its own.
    static var preflightAnswer: Response {
        Response(
            status: .noContent,
            headers: [.accessControlAllowMethods: "GET, HEAD", .accessControlAllowHeaders: "If-None-Match", .accessControlMaxAge: "86400"])
    }

    /// The default list from the gateway's copy, while it can be trusted.
    private func cachedList(_ request: PreparedRequest) -> PreparedResponse? {
        guard LatestListQuery.matches(request.query), let list = latest.current else { return nil }
        var answer = list.answer(request)
        answer.append(.requestID, legalValue: RequestIDMiddleware.resolve(request.header(.requestID)))
        return answer
    }

    /// Any list but the default one from a trusted copy: forwarded (and the default one kept when it comes back).
    @Sendable private func list(_ request: Request, context: GatewayRequestContext) async throws -> Response {
        let query = try Self.listQuery(request.uri.query)
        guard LatestListQuery.matches(query.map { Substring($0) }) else {
            return try await read(request, context: context, objectId: nil, query: query)
        }
        let generation = latest.generation
        let answer = try await fetch(request, context: context, objectId: nil, query: query)
        if answer.status == 200, let etag = answer.headers[.eTag] {
            latest.store(CachedJSON(body: answer.body, etag: etag), fetchedAt: generation)
        }
        return LocationWriteForwarder.relay(answer, status: .init(code: answer.status), requestID: context.requestID).response
    }

    /// A list's read carries the documented query (`listQuery`), as does its GeoJSON (`suffix` `.geojson`);
    /// one pin's carries none, as it takes none, nor does its history (`suffix` `/history`).
    private func read(
        _ request: Request, context: GatewayRequestContext, objectId: String?, query: String? = nil, suffix: String = ""
    ) async throws -> Response {
        let answer = try await fetch(request, context: context, objectId: objectId, query: query, suffix: suffix)
        return LocationWriteForwarder.relay(answer, status: .init(code: answer.status), requestID: context.requestID).response
    }

    private func fetch(
        _ request: Request, context: GatewayRequestContext, objectId: String?, query: String?, suffix: String = ""
    ) async throws -> LocationsClient.Answer {
        return try await locations.send(
            method: .GET, path: LocationsClient.locationPath(objectId) + suffix, query: query, headers: request.headers,
            body: nil, actor: nil, requestID: context.requestID)
    }

    /// The list query the service gets: the documented parameters as the client wrote them, in its order;
    /// any other (the service's own `after` and `wait` among them) is dropped, as Parse ignored what it did
    /// not know. A value longer than its parameter takes is refused here, before the service is asked.
    static func listQuery(_ query: String?) throws(GatewayError) -> String? {
        guard let query else { return nil }
        var kept: [Substring] = []
        for pair in query.split(separator: "&") {
            let name = pair.prefix { $0 != "=" }
            guard let parameter = ListQueryParameter(rawValue: String(name)) else { continue }
            guard pair.utf8.count - name.utf8.count <= parameter.maximumLength + 1 else { throw .invalidQuery(parameter.tooLong) }
            kept.append(pair)
        }
        return kept.isEmpty ? nil : kept.joined(separator: "&")
    }
}
