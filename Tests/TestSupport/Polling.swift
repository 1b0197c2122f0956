/// How long `condition` took to come true, asked every `interval`; nil when it did not within `limit`.
/// The one wait in the tests that looks again rather than being woken: for state a test can only see from
/// outside a process or a pool, with no event to wait on (a gauge on /metrics, a list a server caches).
public func waitFor(
    within limit: Duration, every interval: Duration = .milliseconds(20), _ condition: () async throws -> Bool
) async throws -> Duration? {
    let start = ContinuousClock.now
    while ContinuousClock.now - start < limit {
        if try await condition() { return ContinuousClock.now - start }
        try await Task.sleep(for: interval)
    }
    return nil
}
