import Hummingbird
import HummingbirdTesting

extension ApplicationProtocol {
    /// Serves the application on a free loopback port while `body` runs with that port, then stops it
    /// gracefully. For stand-ins of outside services, which the code under test calls by URL.
    public func withLoopbackServer<Value: Sendable>(_ body: @escaping @Sendable (Int) async throws -> Value) async throws -> Value {
        try await test(.live) { client in
            // The test client opens a connection in the background. Wait until it is served: a NIO server
            // that stops while accepting a connection traps ("Deinited NIOAsyncWriter without calling
            // finish()"), and a quick body could end before the connection is in.
            _ = try await client.execute(uri: "/", method: .get) { _ in }
            return try await body(client.port ?? 0)
        }
    }
}
