import Hummingbird

/// The secret the gateway presents as `Authorization: Bearer <INTERNAL_TOKEN>`: this service sits behind
/// the gateway and must not be usable by anyone who merely reaches its port.
struct InternalToken: Sendable {
    private let expected: [UInt8]

    init(_ token: String) {
        expected = Array("Bearer \(token)".utf8)
    }

    /// Compares every byte whatever the first difference, so the time taken does not tell an attacker how
    /// much of a guess was right. It loops over the header's contiguous bytes, indexed, as every hot read
    /// passes through it.
    func admits(authorization header: String?) -> Bool {
        guard var header, header.utf8.count == expected.count else { return false }
        return header.withUTF8 { given in
            var difference: UInt8 = 0
            for index in expected.indices { difference |= given[index] ^ expected[index] }
            return difference == 0
        }
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
