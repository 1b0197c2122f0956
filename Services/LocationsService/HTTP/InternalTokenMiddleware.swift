import Crypto
import Hummingbird

/// Admits only requests that carry `Authorization: Bearer <INTERNAL_TOKEN>`: this service sits behind the
/// gateway and must not be usable by anyone who merely reaches its port.
struct InternalTokenMiddleware<Context: RequestContext>: RouterMiddleware {
    private let expected: [UInt8]

    init(token: String) {
        expected = Array(SHA256.hash(data: Array(token.utf8)))
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let header = request.headers[.authorization], header.hasPrefix("Bearer "),
              // Comparing digests keeps the time taken independent of how much of the token matched.
              Array(SHA256.hash(data: Array(header.dropFirst(7).utf8))) == expected
        else { throw LocationError.missingInternalToken }
        return try await next(request, context)
    }
}
