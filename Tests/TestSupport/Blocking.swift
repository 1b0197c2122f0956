import Foundation

/// Runs blocking work (a raw socket's reads, a child process waited for) on a thread of its own: on Swift's cooperative pool, which
/// has a thread per core, it would stall the server under test, whose handlers run on that same pool.
public func blocking<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try work() }) }.start()
    }
}
