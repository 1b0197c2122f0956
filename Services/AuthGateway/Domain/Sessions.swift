import Logging
import OnTheMapShared

/// Logging in and out: throttling, the identity provider, and the session record.
struct Sessions: Sendable {
    let provider: any IdentityProvider
    let store: SessionStore
    let cache: SessionCache
    let throttle: LoginThrottle
    let lifetime: Duration
    let logger: Logger

    struct Opened: Sendable {
        let account: Account
        let token: SessionToken
        let expiresAt: Timestamp
    }

    func login(username: String, password: String, address: String?) async throws -> Opened {
        // Checked before the password: once throttled, even the right password waits out the window.
        if let seconds = try await throttle.retryAfter(username: username, address: address) {
            throw GatewayError.throttled(retryAfter: seconds)
        }
        let account: Account
        do {
            account = try await provider.authenticate(username: username, password: password)
        } catch .invalidCredentials {
            try await throttle.recordFailure(username: username, address: address)
            throw GatewayError.invalidCredentials
        } catch .upstreamTimedOut {
            throw GatewayError.identityTimedOut
        } catch .upstreamUnavailable, .upstreamFailed {
            throw GatewayError.identityUnavailable
        } catch {
            throw GatewayError.internalFailure
        }
        try await throttle.recordSuccess(username: username)
        let (token, expires) = try await store.create(for: account, lifetime: lifetime)
        logger.info("session opened", metadata: ["account": "\(account.key)"])
        return Opened(account: account, token: token, expiresAt: expires)
    }

    /// The account of a live session: from this replica's cache when it holds the session, else from the table.
    func account(for token: SessionToken) async throws -> Account? {
        guard token.isWellFormed else { return nil }
        let digest = token.hash
        let hash = digest.hexString
        if let account = cache.account(tokenHash: hash) { return account }
        let generation = cache.generation
        guard let (account, expiresAt) = try await store.account(tokenHash: digest) else { return nil }
        cache.store(account, expiresAt: expiresAt, tokenHash: hash, readAt: generation)
        return account
    }

    /// The account of a session this replica's cache holds as live, found without waiting for anything;
    /// nil says only that the cache cannot tell (`account(for:)` can).
    func cachedAccount(for token: SessionToken) -> Account? {
        guard token.isWellFormed else { return nil }
        return cache.account(tokenHash: token.hash.hexString)
    }

    /// Revokes the session. The other replicas drop it when PostgreSQL's notification reaches them, which
    /// is when it reaches this one too: the answer waits (briefly) for that, so a client told it is logged
    /// out finds its session dead on every replica.
    func logout(_ token: SessionToken) async throws {
        guard token.isWellFormed else { return }
        let digest = token.hash
        guard try await store.revoke(tokenHash: digest) else { return }
        let hash = digest.hexString
        cache.forget(tokenHash: hash)
        let deadline = ContinuousClock.now + Self.revocationEchoWait
        while cache.isListening, !cache.hasHeardRevocation(tokenHash: hash), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(1))
        }
    }

    static let revocationEchoWait = Duration.seconds(1)
}
