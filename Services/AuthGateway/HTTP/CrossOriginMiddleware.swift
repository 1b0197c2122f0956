import HTTPTypes
import Hummingbird

/// Lets a page of any origin read the answers of the routes it wraps, their errors included (a reader that
/// cannot see an error cannot tell it from the network failing), and their entity tags. For public reads
/// only: no credentials are asked for or allowed (`*` forbids a browser to send its cookies along).
struct CrossOriginMiddleware<Context: RequestContext>: RouterMiddleware {
    static var headers: HTTPFields { [.accessControlAllowOrigin: "*", .accessControlExposeHeaders: "ETag"] }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response = try await next(request, context)
        response.headers.append(contentsOf: Self.headers)
        return response
    }
}
