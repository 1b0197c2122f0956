import Hummingbird
import OnTheMapShared
import ServiceKit

/// Answers requests no route took: 405 with `Allow` when the path exists but not for this method, else a
/// 404 that says which route was missing. Both in JSON, never an empty body.
struct UnknownRouteMiddleware: RouterMiddleware {
    typealias Context = GatewayRequestContext

    /// Each public path (`*` one segment) and the methods it answers.
    static let routes: [(pattern: [Substring], methods: [HTTPRequest.Method])] = {
        var routes: [(String, [HTTPRequest.Method])] = [
            ("v1/session", [.post, .delete]), ("api/session", [.post, .delete]),
            ("v1/users/*", [.get]), ("api/users/*", [.get]), ("v1/accounts", [.post]),
            ("v1/StudentLocation/events", [.get]), ("v1/geocode", [.get]),
            ("", [.get]), ("openapi.yaml", [.get]), ("healthz", [.get]), ("readyz", [.get]), ("metrics", [.get]),
        ]
        for base in ["v1/StudentLocation", "parse/classes/StudentLocation", "1/classes/StudentLocation"] {
            routes.append((base, [.get, .post]))
            routes.append((base + "/*", [.get, .put, .delete]))
        }
        return routes.map { ($0.0.split(separator: "/"), $0.1) }
    }()

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as HTTPError where error.status == .notFound || error.status == .methodNotAllowed {
            let segments = request.uri.path.split(separator: "/")
            let allowed = Self.routes.filter { route in
                route.pattern.count == segments.count && zip(route.pattern, segments).allSatisfy { $0 == "*" || $0 == $1 }
            }.flatMap(\.methods)
            var json = JSONWriter()
            json.beginObject()
            if allowed.isEmpty {
                json.field("status", 404)
                json.field("error", "No route for \(request.method) \(request.uri.path).")
                json.endObject()
                return Response.json(json.bytes, status: .notFound)
            }
            json.field("status", 405)
            json.field("error", "\(request.method) is not allowed on \(request.uri.path).")
            json.endObject()
            return Response.json(
                json.bytes, status: .methodNotAllowed,
                headers: [.allow: allowed.map(\.rawValue).joined(separator: ", ")])
        }
    }
}
