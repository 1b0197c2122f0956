import Hummingbird
import HummingbirdTesting
import ServiceKit

extension ApplicationProtocol {
    /// `test(.live)`, failed after `limit` rather than left waiting. HummingbirdTesting waits for the server's
    /// port without end, so an application that fails before its server listens (a migration refused on an
    /// overloaded machine) would hold the whole test run until CI's own limit, with nothing said.
    public func testLive(
        limit: Duration = .seconds(600),
        _ body: @escaping @Sendable (any TestClientProtocol) async throws -> Void
    ) async throws {
        do {
            try await withDeadline(limit) { try await self.test(.live, body) }
        } catch is DeadlineExceeded {
            throw HarnessError("the application did not start, or its test did not end, within \(limit)")
        }
    }
}
