import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NIOHTTP1
import OnTheMapShared
import ServiceKit

/// The StudentLocation routes, under `/v1` and the legacy Parse paths: reads pass straight through;
/// writes need a session, are refused from other sites' pages, and reach the service as the session's
/// account, whatever identity the body claims.
struct LocationsProxyController: Sendable {
    let locations: LocationsClient
    let sessions: Sessions
    let latest: LatestListCache

    static let maximumBodySize = 16 * 1024

    /// Where the routes are mounted: v1, and the legacy Parse paths (`true`).
    static let mounts = [("/v1/StudentLocation", false), ("/parse/classes/StudentLocation", true), ("/1/classes/StudentLocation", true)]

    /// Old Parse clients test for exactly 201 on a created pin; v1 clients for exactly 200.
    func addRoutes(to group: RouterGroup<GatewayRequestContext>, legacyParse: Bool) {
        group.get { request, context in try await list(request, context: context) }
        group.post { request, context in
            var response = try await forward(request, context: context, objectId: nil)
            if legacyParse, response.status == .ok { response.status = .created }
            return response
        }
        group.get(":objectId") { request, context in try await forward(request, context: context, objectId: context.parameters.get("objectId")) }
        group.put(":objectId") { request, context in try await forward(request, context: context, objectId: context.parameters.get("objectId")) }
        group.delete(":objectId") { request, context in try await forward(request, context: context, objectId: context.parameters.get("objectId")) }
    }

    /// The default list comes from the gateway's cache when it can be trusted; anything else is forwarded.
    private func list(_ request: Request, context: GatewayRequestContext) async throws -> Response {
        guard LatestListQuery.matches(request.uri.query.map { Substring($0) }) else {
            return try await forward(request, context: context, objectId: nil)
        }
        if let entry = latest.current {
            return entry.answer(ifNoneMatch: request.headers[.ifNoneMatch]).response
        }
        let generation = latest.generation
        let response = try await forward(request, context: context, objectId: nil, keepBody: { status, etag, body in
            if status == 200, let etag { latest.store(CachedJSON(body: body, etag: etag), fetchedAt: generation) }
        })
        return response
    }

    private func forward(_ request: Request, context: GatewayRequestContext, objectId: String?,
                         keepBody: (Int, String?, ByteBuffer) -> Void = { _, _, _ in }) async throws -> Response {
        var actor: Actor?
        var body: ByteBuffer?
        if request.method != .get && request.method != .head {
            guard !OriginCheck.isCrossSite(request) else { throw GatewayError.crossOrigin }
            guard let token = SessionCookies.token(in: request), let account = try await sessions.account(for: token) else {
                throw GatewayError.notLoggedIn
            }
            actor = account.actor
            do {
                body = try await request.body.collect(upTo: Self.maximumBodySize)
            } catch {
                throw GatewayError.bodyTooLarge(limit: Self.maximumBodySize)
            }
        }
        let path = "/v1/StudentLocation" + (objectId.map { "/" + ($0.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? $0) } ?? "")
        var headers = HTTPHeaders()
        for field in request.headers { headers.add(name: field.name.canonicalName, value: field.value) }
        let answer = try await locations.send(
            method: HTTPMethod(rawValue: request.method.rawValue), path: path, query: request.uri.query,
            headers: headers, body: body, actor: actor, requestID: context.requestID)
        if actor != nil, (200..<300).contains(answer.status) { latest.invalidate() }
        keepBody(answer.status, answer.headers.first(name: "ETag"), answer.body)
        var fields = HTTPFields()
        for name in ["Content-Type", "ETag", "Retry-After"] {
            if let value = answer.headers.first(name: name) { fields[HTTPField.Name(name)!] = value }
        }
        return Response(status: .init(code: answer.status), headers: fields, body: .init(byteBuffer: answer.body))
    }
}
