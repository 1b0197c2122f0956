import Crypto
import Hummingbird

/// The secret the gateway presents as `Authorization: Bearer <INTERNAL_TOKEN>`: this service sits behind
/// the gateway and must not be usable by anyone who merely reaches its port.
struct InternalToken: Sendable {
    private let expected: [UInt8]

    init(_ token: String) {
        expected = Array(SHA256.hash(data: Array(token.utf8)))
    }

    func admits(authorization header: String?) -> Bool {
        guard let header, header.hasPrefix("Bearer ") else { return false }
        // Comparing digests keeps the time taken independent of how much of the token matched.
        return Array(SHA256.hash(data: Array(header.dropFirst(7).utf8))) == expected
    }
}

/// Admits only requests that carry the internal token.
struct InternalTokenMiddleware<Context: RequestContext>: RouterMiddleware {
    let token: InternalToken

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard token.admits(authorization: request.headers[.authorization]) else { throw LocationError.missingInternalToken }
        return try await next(request, context)
    }
}
