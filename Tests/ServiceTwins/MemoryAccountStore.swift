#if DEBUG
import OnTheMapShared
import ServiceKit
import Synchronization

@testable import AuthGateway

/// The accounts in memory, for one process: keys are unique, and so is a local account's address key,
/// as the table's unique index makes them.
final class MemoryAccountStore: AccountStore {
    private struct State {
        var accounts: [String: Account] = [:]
        /// Local accounts' password hashes, by key.
        var passwordHashes: [String: String] = [:]
        /// Local accounts' keys, by their address's key.
        var localKeys: [String: String] = [:]
        /// Disabled accounts' keys, with who disabled them and why.
        var disabled: [String: (by: String, reason: String?)] = [:]
        /// How many times each account's sessions were all ended (by a disabling, or an erasure begun): a
        /// session opened before the last time has ended.
        var disablings: [String: Int] = [:]
        /// Accounts whose erasure began and has not finished, in the order they began.
        var erasing: [String] = []
        /// OpenID Connect (and Facebook) accounts' keys, by issuer and subject.
        var identities: [ExternalIdentityKey: String] = [:]
        /// When each account was added, as a count: of several accounts an operator names by one address,
        /// the first added is the one switched, as the table's `created_at` orders them.
        var added: [String: Int] = [:]
        var additions = 0

        mutating func add(_ account: Account) {
            accounts[account.key] = account
            if added[account.key] == nil {
                additions += 1
                added[account.key] = additions
            }
        }
    }

    private struct ExternalIdentityKey: Hashable {
        var issuer: String
        var subject: String
    }

    private let state = Mutex(State())
    /// Forgets what the other stores keep of an erased account (its key, and the account while there was
    /// one), as `auth.erase_account` deletes it from their tables in the same transaction.
    private let forgetElsewhere: @Sendable (_ key: String, _ account: Account?) -> Void

    init(forgetElsewhere: @escaping @Sendable (_ key: String, _ account: Account?) -> Void = { _, _ in }) {
        self.forgetElsewhere = forgetElsewhere
    }

    func createLocal(email: EmailAddress, passwordHash: String, firstName: String, lastName: String) async throws -> Account {
        try state.withLock { state in
            guard state.localKeys[email.key] == nil else { throw AccountStoreError.emailTaken }
            var key = Account.newKey()
            while state.accounts[key] != nil { key = Account.newKey() }
            let account = Account(key: key, provider: "local", email: email.text, firstName: firstName, lastName: lastName)
            state.add(account)
            state.passwordHashes[key] = passwordHash
            state.localKeys[email.key] = key
            return account
        }
    }

    func signedIn(_ identity: ExternalIdentity) async throws -> Account {
        state.withLock { state in
            let id = ExternalIdentityKey(issuer: identity.issuer, subject: identity.subject)
            var key = state.identities[id] ?? Account.newKey()
            while state.identities[id] == nil && state.accounts[key] != nil { key = Account.newKey() }
            state.identities[id] = key
            let account = Account(
                key: key, provider: identity.provider, email: identity.email, firstName: identity.firstName, lastName: identity.lastName,
                groups: identity.groups)
            state.add(account)
            return account
        }
    }

    func local(emailKey: String) async throws -> (account: Account, passwordHash: String)? {
        state.withLock { state in
            guard let key = state.localKeys[emailKey], let account = state.accounts[key], let hash = state.passwordHashes[key] else {
                return nil
            }
            return (account, hash)
        }
    }

    func account(key: String) async throws -> Account? { self[key] }

    /// An account as it is now; what a session's lookup joins.
    subscript(key: String) -> Account? { state.withLock { $0.accounts[key] } }

    /// Which of the account's sessions may be live: those opened since its sessions were last all ended,
    /// counted as `disablings`; nil while it is disabled, being erased or gone, when none may be, nor any opened.
    func sessionGeneration(key: String) -> Int? {
        state.withLock { state in
            guard state.accounts[key] != nil, state.disabled[key] == nil, !state.erasing.contains(key) else { return nil }
            return state.disablings[key, default: 0]
        }
    }

    /// Whether a session the account opened at `generation` has been ended with all its others since (or the
    /// account is gone), as a disabling or an erasure revokes every session in the table.
    func sessionsEnded(key: String, since generation: Int) -> Bool {
        state.withLock { $0.accounts[key] == nil || $0.disablings[key, default: 0] != generation }
    }

    /// As `PostgresAccountStore.beginErasure`: recorded once, the account disabled (unless it was already, by
    /// an operator whose name and reason stay), and its sessions ended each time.
    func beginErasure(key: String) async throws {
        state.withLock { state in
            if !state.erasing.contains(key) { state.erasing.append(key) }
            guard state.accounts[key] != nil else { return }
            if state.disabled[key] == nil { state.disabled[key] = ("erasure", "the student asked to be erased") }
            state.disablings[key, default: 0] += 1
        }
    }

    /// The count of disablings stays: a session of the erased account stays ended whatever its key becomes.
    func finishErasure(key: String) async throws {
        let erased = state.withLock { state in
            let account = state.accounts.removeValue(forKey: key)
            if let account, account.provider == "local" {
                state.localKeys[EmailAddress(account.email).key] = nil
            }
            state.passwordHashes[key] = nil
            state.identities = state.identities.filter { $0.value != key }
            state.disabled[key] = nil
            state.added[key] = nil
            state.erasing.removeAll { $0 == key }
            return account
        }
        forgetElsewhere(key, erased)
    }

    func pendingErasures() async throws -> [String] { state.withLock { $0.erasing } }

    func disable(emailKey: String, by operatorName: String, reason: String?) async throws -> AccountSwitch {
        state.withLock { state in
            guard let key = Self.key(of: emailKey, in: state), let account = state.accounts[key] else { return .noAccount }
            guard state.disabled[key] == nil else { return .already(account) }
            state.disabled[key] = (operatorName, reason)
            state.disablings[key, default: 0] += 1
            return .done(account)
        }
    }

    func enable(emailKey: String) async throws -> AccountSwitch {
        state.withLock { state in
            guard let key = Self.key(of: emailKey, in: state), let account = state.accounts[key] else { return .noAccount }
            guard state.disabled.removeValue(forKey: key) != nil else { return .already(account) }
            return .done(account)
        }
    }

    /// The local account with this address's key, else the first added of those an identity provider named with it.
    private static func key(of emailKey: String, in state: State) -> String? {
        state.localKeys[emailKey]
            ?? state.accounts.values.filter { $0.provider != "local" && EmailAddress($0.email).key == emailKey }
            .min { state.added[$0.key, default: 0] < state.added[$1.key, default: 0] }?.key
    }

    /// Nothing is announced: with no other replica and no session listener, no cache holds the account.
    /// The groups are left as they are, none for a new account, as the table's statement leaves them.
    func upsertExternal(_ account: Account) async throws {
        state.withLock { state in
            guard var stored = state.accounts[account.key] else {
                var added = account
                added.groups = []
                state.add(added)
                return
            }
            stored.email = account.email
            stored.firstName = account.firstName
            stored.lastName = account.lastName
            state.accounts[account.key] = stored
        }
    }
}
#endif
