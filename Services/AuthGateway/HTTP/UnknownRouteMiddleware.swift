import Hummingbird
import OnTheMapShared
import PreparedHTTP
import ServiceKit
import Synchronization

/// Answers requests no route took: 405 with `Allow` when the path exists but not for this method, else a
/// 404 that says which route was missing. Both in JSON, never an empty body.
struct UnknownRouteMiddleware: RouterMiddleware {
    typealias Context = GatewayRequestContext

    /// The router's routes (`PreparedRoutes.table()`), handed over once every route is added (`know`): the
    /// paths and their methods are spelled only where the routes are added.
    final class Routes: Sendable {
        private let known = Mutex(RouteTable())

        func know(_ table: RouteTable) {
            known.withLock { $0 = table }
        }

        func methods(on path: Substring) -> [HTTPRequest.Method] {
            known.withLock { $0.methods(on: path) }
        }
    }

    let routes: Routes

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as HTTPError where error.status == .notFound || error.status == .methodNotAllowed {
            let allowed = routes.methods(on: Substring(request.uri.path))
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
