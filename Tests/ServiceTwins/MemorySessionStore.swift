#if DEBUG
import OnTheMapShared
import ServiceKit
import Synchronization

@testable import AuthGateway

/// The sessions in memory, for one process, over the accounts of a `MemoryAccountStore`: a lookup answers
/// the account as it is now, and expiry is decided by the same clock that set it.
final class MemorySessionStore: SessionStore {
    private struct Session {
        let accountKey: String
        let expiresAt: Timestamp
        /// The account's `sessionGeneration` when it was opened.
        let generation: Int
        var revoked = false
    }

    /// By the hex SHA-256 of the token.
    private let sessions = Mutex([String: Session]())
    let accounts: MemoryAccountStore
    /// Sets each session's expiry, and decides which have expired.
    let clock: any WallClock

    init(accounts: MemoryAccountStore, clock: any WallClock) {
        self.accounts = accounts
        self.clock = clock
    }

    func create(for account: Account, lifetime: Duration) async throws -> (token: SessionToken, expiresAt: Timestamp) {
        guard let generation = accounts.sessionGeneration(key: account.key) else { throw SessionStoreError.accountDisabled }
        let now = clock.now
        let token = SessionToken.generate(at: now)
        let expires = now.adding(lifetime)
        sessions.withLock { $0[token.hash.hexString] = Session(accountKey: account.key, expiresAt: expires, generation: generation) }
        return (token, expires)
    }

    func account(tokenHash: [UInt8]) async throws -> (account: Account, expiresAt: Timestamp)? {
        live(tokenHash.hexString, at: clock.now)
    }

    func liveSessions(tokenHashes: [String]) async throws -> [String: (account: Account, expiresAt: Timestamp)] {
        let now = clock.now
        var found: [String: (account: Account, expiresAt: Timestamp)] = [:]
        for hash in tokenHashes {
            found[hash] = live(hash, at: now)
        }
        return found
    }

    /// A session its account's disabling or erasure ended counts as revoked already, as it is in the table.
    @discardableResult
    func revoke(tokenHash: [UInt8]) async throws -> Bool {
        let hash = tokenHash.hexString
        guard let session = sessions.withLock({ $0[hash] }), !session.revoked,
            !accounts.sessionsEnded(key: session.accountKey, since: session.generation)
        else { return false }
        return sessions.withLock { sessions in
            guard sessions[hash]?.revoked == false else { return false }
            sessions[hash]?.revoked = true
            return true
        }
    }

    private func live(_ hash: String, at now: Timestamp) -> (account: Account, expiresAt: Timestamp)? {
        guard let session = sessions.withLock({ $0[hash] }), !session.revoked, now < session.expiresAt,
            let account = accounts[session.accountKey], accounts.sessionGeneration(key: session.accountKey) == session.generation
        else { return nil }
        return (account, session.expiresAt)
    }
}
#endif
