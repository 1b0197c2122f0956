import OnTheMapShared
import ServiceKit
import Synchronization

/// The live sessions this replica has looked up, so that a write does not cost a query for its session.
///
/// Whatever would make an entry wrong is announced on the channel `auth_sessions` by the statement that
/// does it (a logout: `revoked:<token hash>`; new names from an identity provider: `account:<key>`), and
/// every replica drops what it hears of. While the replica is not listening an announcement may be missed:
/// nothing new is cached then, and what was held is marked unconfirmed. It is still served (so a database
/// outage does not send every write to a database that is down, or refuse it) until the listener is back
/// and `Sessions` has checked it against the table. No entry outlives `maximumAge`, whatever happens.
final class SessionCache: Sendable {
    static let channel = "auth_sessions"

    struct Entry: Sendable {
        let account: Account
        let expiresAt: Timestamp
        let storedAt: Timestamp
    }

    private struct State {
        var entries: [String: Entry] = [:]
        var listening = false
        /// Entries held across a time nobody listened, not yet checked against the table.
        var unconfirmed: Set<String> = []
        /// Moves on with every announcement: a lookup that raced one is not kept.
        var generation: UInt64 = 0
        /// The last revocations heard, newest last, for a logout to see its own come back.
        var heardRevocations: [String] = []
        /// Logouts waiting for their revocation to come back, by a number of their own.
        var echoWaiters: [UInt64: (tokenHash: String, continuation: CheckedContinuation<Void, Never>)] = [:]
        var nextWaiter: UInt64 = 0
    }

    private let state = Mutex(State())
    let capacity: Int
    let maximumAge: Duration
    /// Decides when an entry has expired or is too old to trust.
    let clock: any WallClock

    init(capacity: Int = 100_000, maximumAge: Duration = .seconds(60), clock: any WallClock = SystemClock()) {
        self.capacity = capacity
        self.maximumAge = maximumAge
        self.clock = clock
    }

    /// The account of a session known to be live, by the hex SHA-256 of its token.
    func account(tokenHash: String) -> Account? {
        let now = clock.now
        return state.withLock { state in
            guard let entry = state.entries[tokenHash] else { return nil }
            guard now < entry.expiresAt, now < entry.storedAt.adding(maximumAge) else {
                state.entries[tokenHash] = nil
                state.unconfirmed.remove(tokenHash)
                return nil
            }
            return entry.account
        }
    }

    /// Logouts waiting for their revocation to come back.
    var echoWaiterCount: Int { state.withLock { $0.echoWaiters.count } }

    /// The generation to pass to `store` after reading the database.
    var generation: UInt64 { state.withLock { $0.generation } }

    func store(_ account: Account, expiresAt: Timestamp, tokenHash: String, readAt generation: UInt64) {
        state.withLock { state in
            guard state.listening, state.generation == generation else { return }
            if state.entries.count >= capacity, state.entries[tokenHash] == nil {
                state.entries.remove(at: state.entries.startIndex)
            }
            state.entries[tokenHash] = Entry(account: account, expiresAt: expiresAt, storedAt: clock.now)
        }
    }

    /// One announcement from `auth_sessions`.
    func heard(_ payload: String) {
        let echoed = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.generation &+= 1
            if payload.hasPrefix(Self.revokedPrefix) {
                let hash = String(payload.dropFirst(Self.revokedPrefix.count))
                state.entries[hash] = nil
                state.unconfirmed.remove(hash)
                state.heardRevocations.append(hash)
                if state.heardRevocations.count > 64 { state.heardRevocations.removeFirst() }
                return Self.removeWaiters(&state) { $0 == hash }
            } else if payload.hasPrefix(Self.accountPrefix) {
                let key = payload.dropFirst(Self.accountPrefix.count)
                state.entries = state.entries.filter { $0.value.account.key != key }
            } else {
                state.entries.removeAll()
                state.unconfirmed.removeAll()
            }
            return []
        }
        for continuation in echoed { continuation.resume() }
    }

    /// Returns once this replica has heard the revocation of `tokenHash` come back: at once if it already
    /// has or if it is not listening (then nothing will come), and when the calling task is cancelled.
    func revocationHeard(tokenHash: String) async {
        let waiter = state.withLock { state in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let waits = state.withLock { state in
                    // Cancelled before this point, the cancellation handler found no waiter to resume.
                    guard state.listening, !state.heardRevocations.contains(tokenHash), !Task.isCancelled else { return false }
                    state.echoWaiters[waiter] = (tokenHash, continuation)
                    return true
                }
                if !waits { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.echoWaiters.removeValue(forKey: waiter) }?.continuation.resume()
        }
    }

    private static func removeWaiters(_ state: inout State, where matches: (String) -> Bool) -> [CheckedContinuation<Void, Never>] {
        let done = state.echoWaiters.filter { matches($0.value.tokenHash) }
        for key in done.keys { state.echoWaiters[key] = nil }
        return done.values.map(\.continuation)
    }

    /// Drops one session at once, before its announcement comes back.
    func forget(tokenHash: String) {
        state.withLock { state in
            state.generation &+= 1
            state.entries[tokenHash] = nil
            state.unconfirmed.remove(tokenHash)
        }
    }

    /// Drops every session of one account at once, as the announcement that ended them (or renamed the account)
    /// will when it comes back.
    func forget(accountKey: String) {
        heard(Self.accountPrefix + accountKey)
    }

    /// Whether this replica hears announcements now. Losing them leaves every entry held unconfirmed.
    func setListening(_ listening: Bool) {
        let unheard = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.listening = listening
            state.generation &+= 1
            guard !listening else { return [] }
            state.unconfirmed.formUnion(state.entries.keys)
            // What was announced meanwhile will not be heard: nobody waits for it.
            return Self.removeWaiters(&state) { _ in true }
        }
        for continuation in unheard { continuation.resume() }
    }

    /// The token hashes to check against the table once the replica listens again.
    var unconfirmed: [String] { state.withLock { Array($0.unconfirmed) } }

    /// The outcome of checking `checked` against the table: the live ones, with their accounts as they are
    /// now, stay (confirmed); the others are dropped. An entry an announcement dropped meanwhile stays dropped.
    func confirm(_ checked: [String], live: [String: (account: Account, expiresAt: Timestamp)]) {
        state.withLock { state in
            for hash in checked where state.unconfirmed.remove(hash) != nil {
                guard let entry = state.entries[hash] else { continue }
                if let session = live[hash] {
                    state.entries[hash] = Entry(account: session.account, expiresAt: session.expiresAt, storedAt: entry.storedAt)
                } else {
                    state.entries[hash] = nil
                }
            }
        }
    }

    /// The prefixes of the payloads, as the SQL that announces them writes them.
    static let revokedPrefix = "revoked:"
    static let accountPrefix = "account:"
}
