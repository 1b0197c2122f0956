import Foundation
import OnTheMapShared
import PostgresNIO
import ServiceKit

/// The sessions opened at login: only a hash of each token is kept, and a session is live until it expires
/// or is revoked. `PostgresSessionStore` is the gateway's; the tests' `MemorySessionStore`
/// (module `ServiceTwins`) holds the same in memory, for router-level tests of what is decided above the store.
protocol SessionStore: Sendable {
    /// A new session for the account, expiring `lifetime` from now; `SessionStoreError.accountDisabled` while
    /// an operator has the account disabled.
    func create(for account: Account, lifetime: Duration) async throws -> (token: SessionToken, expiresAt: Timestamp)
    /// The account of a live session (not revoked, not expired, its account not disabled), by the SHA-256 of its token.
    func account(tokenHash: [UInt8]) async throws -> (account: Account, expiresAt: Timestamp)?
    /// Of the sessions with these token hashes (hex SHA-256), the live ones and their accounts as they are now.
    func liveSessions(tokenHashes: [String]) async throws -> [String: (account: Account, expiresAt: Timestamp)]
    /// Ends a session (by the SHA-256 of its token) now. Returns false when none was left to end: there is no
    /// session with this token, or it was revoked already (as its account's disabling or erasure revokes them all).
    @discardableResult
    func revoke(tokenHash: [UInt8]) async throws -> Bool
}

enum SessionStoreError: Error { case accountDisabled }

/// `auth.sessions`. A revocation is announced to every replica (see `SessionCache`) in its own statement.
struct PostgresSessionStore: SessionStore {
    let database: Database
    /// Sets each session's expiry, and decides which have expired.
    let clock: any WallClock

    func create(for account: Account, lifetime: Duration) async throws -> (token: SessionToken, expiresAt: Timestamp) {
        let now = clock.now
        let token = SessionToken.generate(at: now)
        let expires = now.adding(lifetime)
        // The account's row is locked while the session is opened, so a disabling waits for it and then
        // ends it too (see `PostgresAccountStore.disable`).
        let opened = try await database.write(
            """
            WITH enabled AS (
                SELECT key FROM auth.accounts WHERE key = \(account.key) AND disabled_at IS NULL FOR SHARE
            )
            INSERT INTO auth.sessions (token_hash, account_key, expires_at)
            SELECT \(ByteBuffer(bytes: token.hash)), key, \(expires.iso8601)::timestamptz FROM enabled
            RETURNING account_key
            """)
        guard !opened.isEmpty else { throw SessionStoreError.accountDisabled }
        return (token, expires)
    }

    func account(tokenHash: [UInt8]) async throws -> (account: Account, expiresAt: Timestamp)? {
        let rows = try await database.query(
            """
            SELECT a.key, a.provider, a.email, a.first_name, a.last_name, a.groups, s.expires_at
            FROM auth.sessions s JOIN auth.accounts a ON a.key = s.account_key
            WHERE s.token_hash = \(ByteBuffer(bytes: tokenHash)) AND s.revoked_at IS NULL AND a.disabled_at IS NULL AND s.expires_at > \(clock.now.iso8601)::timestamptz
            """)
        guard let row = rows.first else { return nil }
        let (key, provider, email, first, last, groups, expires) = try row.decode((String, String, String, String, String, [String], Date).self)
        return (Account(key: key, provider: provider, email: email, firstName: first, lastName: last, groups: groups), Timestamp(expires))
    }

    func liveSessions(tokenHashes: [String]) async throws -> [String: (account: Account, expiresAt: Timestamp)] {
        let rows = try await database.query(
            """
            SELECT encode(s.token_hash, 'hex'), a.key, a.provider, a.email, a.first_name, a.last_name, a.groups, s.expires_at
            FROM auth.sessions s JOIN auth.accounts a ON a.key = s.account_key
            WHERE s.token_hash IN (SELECT decode(hash, 'hex') FROM unnest(\(tokenHashes)::text[]) AS hash)
              AND s.revoked_at IS NULL AND a.disabled_at IS NULL AND s.expires_at > \(clock.now.iso8601)::timestamptz
            """)
        var live: [String: (account: Account, expiresAt: Timestamp)] = [:]
        for row in rows {
            let (hash, key, provider, email, first, last, groups, expires) = try row.decode(
                (String, String, String, String, String, String, [String], Date).self)
            live[hash] = (Account(key: key, provider: provider, email: email, firstName: first, lastName: last, groups: groups), Timestamp(expires))
        }
        return live
    }

    /// Tells every replica in the same statement (the notification goes out when it commits).
    @discardableResult
    func revoke(tokenHash: [UInt8]) async throws -> Bool {
        let rows = try await database.write(
            """
            WITH revoked AS (
                UPDATE auth.sessions SET revoked_at = now()
                WHERE token_hash = \(ByteBuffer(bytes: tokenHash)) AND revoked_at IS NULL
                RETURNING token_hash
            )
            SELECT pg_notify(\(SessionCache.channel), \(SessionCache.revokedPrefix) || encode(token_hash, 'hex')) FROM revoked
            """)
        return !rows.isEmpty
    }
}
