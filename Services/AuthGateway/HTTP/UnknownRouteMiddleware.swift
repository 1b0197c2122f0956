import Hummingbird
import OnTheMapShared
import ServiceKit
import Synchronization

/// Answers requests no route took: 405 with `Allow` when the path exists but not for this method, else a
/// 404 that says which route was missing. Both in JSON, never an empty body.
struct UnknownRouteMiddleware: RouterMiddleware {
    typealias Context = GatewayRequestContext

    /// The router's own list of its routes, handed over once every route is added (`know`); the paths
    /// and their methods are spelled only where the routes are added.
    final class Routes: Sendable {
        private let known = Mutex<[(pattern: [Substring], method: HTTPRequest.Method)]>([])

        func know(_ routes: [Router<Context>.RouteDescription]) {
            // A captured segment (`:objectId`, written `{objectId}`) or a wildcard matches any one segment.
            let patterns = routes.map { route in
                let pattern = route.path.components.map { segment -> Substring in
                    let text = segment.description
                    return text.hasPrefix("{") || text == "*" ? "*" : Substring(text)
                }
                return (pattern, route.method)
            }
            known.withLock { $0 = patterns }
        }

        /// The methods routed on a path of these segments. As in the router, a segment spelled out wins over
        /// a capture: `/v1/StudentLocation/events` takes GET only, not what `/v1/StudentLocation/:objectId` takes.
        func methods(on segments: [Substring]) -> [HTTPRequest.Method] {
            let matching = known.withLock { known in
                known.filter { route in
                    route.pattern.count == segments.count && zip(route.pattern, segments).allSatisfy { $0 == "*" || $0 == $1 }
                }
            }
            let captures = matching.map { route in route.pattern.map { $0 == "*" ? 1 : 0 } }
            guard let closest = captures.min(by: { $0.lexicographicallyPrecedes($1) }) else { return [] }
            return zip(matching, captures).filter { $0.1 == closest }.map(\.0.method)
        }
    }

    let routes: Routes

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as HTTPError where error.status == .notFound || error.status == .methodNotAllowed {
            let allowed = routes.methods(on: request.uri.path.split(separator: "/"))
            var json = JSONWriter()
            json.beginObject()
            if allowed.isEmpty {
                json.field("status", 404)
                json.field("error", "No route for \(request.method) \(request.uri.path).")
                json.endObject()
                return Response.json(json.buffer, status: .notFound)
            }
            json.field("status", 405)
            json.field("error", "\(request.method) is not allowed on \(request.uri.path).")
            json.endObject()
            return Response.json(
                json.buffer, status: .methodNotAllowed,
                headers: [.allow: allowed.map(\.rawValue).joined(separator: ", ")])
        }
    }
}
