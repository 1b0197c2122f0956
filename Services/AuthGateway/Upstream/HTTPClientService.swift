import AsyncHTTPClient
import ServiceLifecycle

/// Shuts the shared HTTP client down after the server has stopped, in the application's service order.
struct HTTPClientService: Service {
    let client: HTTPClient

    func run() async throws {
        try? await gracefulShutdown()
        try await client.shutdown()
    }
}
