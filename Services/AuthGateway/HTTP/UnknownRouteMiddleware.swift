import Hummingbird
import PreparedHTTP
import ServiceKit
import Synchronization

/// Answers requests no route took: 405 with `Allow` when the path exists but not for this method, else a
/// 404 that says which route was missing. Both in JSON, never an empty body, in the shape the path's
/// clients read (`ErrorStyle.unrouted`).
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
            let path = request.uri.path
            let allowed = routes.methods(on: Substring(path))
            let refusal: GatewayError =
                allowed.isEmpty
                ? .noRoute(method: request.method.rawValue, path: path)
                : .methodNotAllowed(method: request.method.rawValue, path: path, allowed: allowed.map(\.rawValue))
            return ErrorStyle.unrouted(Substring(path)).response(for: refusal)
        }
    }
}
