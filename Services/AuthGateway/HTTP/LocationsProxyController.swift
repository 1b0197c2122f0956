import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NIOHTTP1
import OnTheMapShared
import ServiceKit

/// The StudentLocation routes, under `/v1` and the legacy Parse paths: reads pass through (the default list
/// from the gateway's copy when it can be trusted), carrying only what the public API documents; writes go
/// to `LocationWriteForwarder`, which most of them reach before the router already.
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
        let query = try Self.listQuery(request.uri.query)
        guard LatestListQuery.matches(query.map { Substring($0) }) else {
            return try await read(request, context: context, objectId: nil, query: query)
        }
        if let entry = latest.current {
            return entry.answer(ifNoneMatch: request.headers[.ifNoneMatch]).response
        }
        let generation = latest.generation
        let answer = try await fetch(request, context: context, objectId: nil, query: query)
        if answer.status == 200, let etag = answer.headers.first(name: "ETag") {
            latest.store(CachedJSON(body: answer.body, etag: etag), fetchedAt: generation)
        }
        return LocationWriteForwarder.relay(answer, status: .init(code: answer.status), requestID: context.requestID).response
    }

    /// A list's read carries the documented query (`listQuery`); one pin's carries none, as it takes none.
    private func read(_ request: Request, context: GatewayRequestContext, objectId: String?, query: String? = nil) async throws -> Response {
        let answer = try await fetch(request, context: context, objectId: objectId, query: query)
        return LocationWriteForwarder.relay(answer, status: .init(code: answer.status), requestID: context.requestID).response
    }

    private func fetch(_ request: Request, context: GatewayRequestContext, objectId: String?, query: String?) async throws -> LocationsClient.Answer {
        return try await locations.send(
            method: .GET, path: LocationsClient.locationPath(objectId), query: query, headers: Self.headers(of: request),
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

    /// The door from the router, for the writes that did not skip it (HTTP/1.0, a closing connection, a
    /// body sent after `Expect: 100-continue`, a request pipelined behind a routed one).
    private func write(_ request: Request, context: GatewayRequestContext, objectId: String?, legacyParse: Bool) async throws -> Response {
        let body = try? await request.body.collect(upTo: LocationWriteForwarder.maximumBodySize)
        let write = LocationWriteForwarder.Write(
            method: HTTPMethod(rawValue: request.method.rawValue), objectId: objectId, legacyParse: legacyParse,
            headers: Self.headers(of: request), body: body, requestID: context.requestID)
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
