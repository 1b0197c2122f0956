import Logging
import OnTheMapShared
import ServiceKit

/// Logging in and out: throttling, the identity provider, and the session record.
struct Sessions: Sendable {
    let provider: any IdentityProvider
    let store: any SessionStore
    let cache: SessionCache
    let throttle: LoginThrottle
    let lifetime: Duration
    let logger: Logger

    struct Opened: Sendable {
        let account: Account
        let token: SessionToken
        let expiresAt: Timestamp
    }

    func login(_ credential: Credential, address: String?) async throws -> Opened {
        var username: EmailAddress?
        switch credential {
        case .password(let name, _): username = name
        case .facebook: guard provider.acceptsFacebook else { throw GatewayError.unsupportedCredential("Facebook") }
        }
        // Admitted before the password is checked: once throttled, even the right password waits out the window.
        let attempt: LoginThrottle.Attempt
        switch try await throttle.admitLogin(account: username, address: address) {
        case .admitted(let admitted): attempt = admitted
        case .throttled(let seconds): throw GatewayError.throttled(retryAfter: seconds)
        }
        let account: Account
        do {
            account = try await provider.authenticate(credential)
        } catch .invalidCredentials {
            throw GatewayError.invalidCredentials
        } catch {
            // The password could not be checked, so the attempt is no failure: it is taken back. Unless the
            // database is what failed: taking it back would wait on the same database as long again before
            // the 503, doubling the client's wait, so it stays counted and ages out with the window.
            if case .storeUnavailable = error {
                logger.warning("a login attempt stays counted: the database is unavailable to take it back")
            } else {
                try await throttle.withdraw(attempt)
            }
            switch error {
            case .upstreamTimedOut: throw GatewayError.identityTimedOut
            case .upstreamUnavailable, .upstreamFailed: throw GatewayError.identityUnavailable
            case .storeUnavailable: throw GatewayError.databaseUnavailable
            case .invalidCredentials, .internalFailure: throw GatewayError.internalFailure
            }
        }
        try await throttle.succeeded(attempt, account: username)
        return try await open(for: account)
    }

    /// A new session of an account whose credential was checked (by a login, or a sign-in's ID token).
    func open(for account: Account) async throws -> Opened {
        // An outside provider's names are read again at each login, and a change is announced to every
        // replica: this one reads the account's other sessions again at once, before the announcement is back.
        cache.forget(accountKey: account.key)
        // Said only to whoever knows the password, so it tells nobody else whether the account exists.
        let token: SessionToken
        let expires: Timestamp
        do {
            (token, expires) = try await store.create(for: account, lifetime: lifetime)
        } catch SessionStoreError.accountDisabled {
            logger.info("login refused: the account is disabled", metadata: ["account": "\(account.key)"])
            throw GatewayError.accountDisabled
        }
        logger.info("session opened", metadata: ["account": "\(account.key)"])
        return Opened(account: account, token: token, expiresAt: expires)
    }

    /// What this replica's cache knows of a token, found without waiting for anything.
    enum CachedLookup {
        /// A live session's account.
        case live(Account)
        /// Not a token any session could have.
        case malformed
        /// Not in the cache: `account(digest:)` asks the table, with the digest worked out once here.
        case unknown(digest: [UInt8])
    }

    func cachedLookup(_ token: SessionToken) -> CachedLookup {
        guard token.isWellFormed else { return .malformed }
        let digest = token.hash
        if let account = cache.account(tokenHash: digest.hexString) { return .live(account) }
        return .unknown(digest: digest)
    }

    /// The account of a live session: from this replica's cache when it holds the session, else from the table.
    func account(for token: SessionToken) async throws -> Account? {
        switch cachedLookup(token) {
        case .live(let account): account
        case .malformed: nil
        case .unknown(let digest): try await account(digest: digest)
        }
    }

    /// A session the cache does not hold, from the table; kept in the cache when live.
    func account(digest: [UInt8]) async throws -> Account? {
        let generation = cache.generation
        guard let (account, expiresAt) = try await store.account(tokenHash: digest) else { return nil }
        cache.store(account, expiresAt: expiresAt, tokenHash: digest.hexString, readAt: generation)
        return account
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
        _ = try? await withDeadline(Self.revocationEchoWait) { [cache] in await cache.revocationHeard(tokenHash: hash) }
    }

    static let revocationEchoWait = Duration.seconds(1)

    /// Every session of the account was ended in the database (an erasure): this replica stops honouring them
    /// at once; the others when the announcement of it reaches them.
    func sessionsEnded(accountKey: String) {
        cache.forget(accountKey: accountKey)
    }

    /// The replica's `LISTEN` connection came or went. Once it is back, the sessions held through the time
    /// nobody listened are checked against the table (a revocation may have been missed); until then, and
    /// if the check fails, they are served as they were, for at most the cache's `maximumAge`.
    func listeningChanged(_ listening: Bool) async {
        cache.setListening(listening)
        let unconfirmed = cache.unconfirmed
        guard listening, !unconfirmed.isEmpty else { return }
        var start = unconfirmed.startIndex
        do {
            while start < unconfirmed.endIndex {
                let batch = Array(unconfirmed[start..<min(start + Self.recheckBatch, unconfirmed.endIndex)])
                cache.confirm(batch, live: try await store.liveSessions(tokenHashes: batch))
                start += batch.count
            }
            logger.info("cached sessions rechecked after the session listener came back", metadata: ["sessions": "\(unconfirmed.count)"])
        } catch {
            logger.warning(
                "could not recheck cached sessions; they expire from the cache by themselves",
                metadata: ["error": "\(String(reflecting: error))", "unchecked": "\(unconfirmed.count - start)"])
        }
    }

    static let recheckBatch = 1_000
}
