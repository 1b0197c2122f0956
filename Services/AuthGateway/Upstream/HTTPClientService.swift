import AsyncHTTPClient
import ServiceLifecycle

/// Shuts the HTTP clients down after the server has stopped, in the application's service order.
struct HTTPClientService: Service {
    let client: HTTPClient
    let `internal`: InternalHTTPClient

    func run() async throws {
        try? await gracefulShutdown()
        `internal`.closeIdleConnections()
        try await client.shutdown()
    }
}
