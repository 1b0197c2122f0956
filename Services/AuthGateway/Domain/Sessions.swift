import Logging
import OnTheMapShared

/// Logging in and out: throttling, the identity provider, and the session record.
struct Sessions: Sendable {
    let provider: any IdentityProvider
    let store: SessionStore
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

    func account(for token: SessionToken) async throws -> Account? {
        try await store.account(for: token)?.account
    }

    func logout(_ token: SessionToken) async throws {
        try await store.revoke(token)
    }
}
