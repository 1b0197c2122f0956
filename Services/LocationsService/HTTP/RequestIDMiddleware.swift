import HTTPTypes
import Hummingbird
import OnTheMapShared

/// Puts the gateway's `X-Request-ID` into every log line of the request, so one request can be followed
/// across both services' logs.
struct RequestIDMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        if let id = request.headers[.requestID], !id.isEmpty, id.utf8.count <= 200 {
            context.logger[metadataKey: "request_id"] = "\(id)"
        }
        return try await next(request, context)
    }
}
