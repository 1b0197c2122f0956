import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NIOHTTP1
import OnTheMapShared
import ServiceKit

/// The StudentLocation routes, under `/v1` and the legacy Parse paths: reads pass straight through (the
/// default list from the gateway's copy when it can be trusted); writes go to `LocationWriteForwarder`,
/// which most of them reach before the router already.
struct LocationsProxyController: Sendable {
    let locations: LocationsClient
    let writes: LocationWriteForwarder
    let latest: LatestListCache

    /// Where the routes are mounted: v1, and the legacy Parse paths (`true`).
    static let mounts = [("/v1/StudentLocation", false), ("/parse/classes/StudentLocation", true), ("/1/classes/StudentLocation", true)]

    func addRoutes(to group: RouterGroup<GatewayRequestContext>, legacyParse: Bool) {
        group.get { request, context in try await list(request, context: context) }
        group.post { request, context in try await write(request, context: context, objectId: nil, legacyParse: legacyParse) }
        group.get(":objectId") { request, context in
            try await read(request, context: context, objectId: context.parameters.get("objectId"))
        }
        group.put(":objectId") { request, context in
            try await write(request, context: context, objectId: context.parameters.get("objectId"), legacyParse: legacyParse)
        }
        group.delete(":objectId") { request, context in
            try await write(request, context: context, objectId: context.parameters.get("objectId"), legacyParse: legacyParse)
        }
    }

    /// The default list comes from the gateway's cache when it can be trusted; anything else is forwarded.
    private func list(_ request: Request, context: GatewayRequestContext) async throws -> Response {
        guard LatestListQuery.matches(request.uri.query.map { Substring($0) }) else {
            return try await read(request, context: context, objectId: nil)
        }
        if let entry = latest.current {
            return entry.answer(ifNoneMatch: request.headers[.ifNoneMatch]).response
        }
        let generation = latest.generation
        let answer = try await fetch(request, context: context, objectId: nil)
        if answer.status == 200, let etag = answer.headers.first(name: "ETag") {
            latest.store(CachedJSON(body: answer.body, etag: etag), fetchedAt: generation)
        }
        return LocationWriteForwarder.relay(answer, status: .init(code: answer.status), requestID: context.requestID).response
    }

    private func read(_ request: Request, context: GatewayRequestContext, objectId: String?) async throws -> Response {
        let answer = try await fetch(request, context: context, objectId: objectId)
        return LocationWriteForwarder.relay(answer, status: .init(code: answer.status), requestID: context.requestID).response
    }

    private func fetch(_ request: Request, context: GatewayRequestContext, objectId: String?) async throws -> LocationsClient.Answer {
        return try await locations.send(method: .GET, path: LocationsClient.locationPath(objectId), query: request.uri.query, headers: Self.headers(of: request),
                                        body: nil, actor: nil, requestID: context.requestID)
    }

    /// The door from the router, for the writes that did not skip it (HTTP/1.0, a closing connection, a
    /// body sent after `Expect: 100-continue`, a request pipelined behind a routed one).
    private func write(_ request: Request, context: GatewayRequestContext, objectId: String?, legacyParse: Bool) async throws -> Response {
        let body = try? await request.body.collect(upTo: LocationWriteForwarder.maximumBodySize)
        let write = LocationWriteForwarder.Write(
            method: HTTPMethod(rawValue: request.method.rawValue), objectId: objectId, legacyParse: legacyParse,
            headers: Self.headers(of: request), query: request.uri.query, body: body, requestID: context.requestID)
        return try await writes.forward(write, on: context.eventLoop).get().response
    }

    /// The request's headers as NIO spells them, `Host` among them.
    private static func headers(of request: Request) -> HTTPHeaders {
        var headers = HTTPHeaders()
        if let authority = request.head.authority { headers.add(name: "Host", value: authority) }
        for field in request.headers { headers.add(name: field.name.canonicalName, value: field.value) }
        return headers
    }
}
