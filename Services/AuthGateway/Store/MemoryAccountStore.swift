import Synchronization

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
        /// How many times each account was disabled: a session opened before the last time has ended.
        var disablings: [String: Int] = [:]
        /// Accounts whose erasure began and has not finished.
        var erasing: Set<String> = []
        /// OpenID Connect (and Facebook) accounts' keys, by issuer and subject.
        var identities: [ExternalIdentityKey: String] = [:]
    }

    private struct ExternalIdentityKey: Hashable {
        var issuer: String
        var subject: String
    }

    private let state = Mutex(State())

    init() {}

    func createLocal(email: EmailAddress, passwordHash: String, firstName: String, lastName: String) async throws -> Account {
        try state.withLock { state in
            guard state.localKeys[email.key] == nil else { throw AccountStoreError.emailTaken }
            var key = Account.newKey()
            while state.accounts[key] != nil { key = Account.newKey() }
            let account = Account(key: key, provider: "local", email: email.text, firstName: firstName, lastName: lastName)
            state.accounts[key] = account
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
                key: key, provider: identity.provider, email: identity.email, firstName: identity.firstName, lastName: identity.lastName)
            state.accounts[key] = account
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

    /// Which of the account's sessions may be live: those opened since it was last disabled, counted as
    /// `disablings`; nil while it is disabled, when none may be, nor any opened.
    func sessionGeneration(key: String) -> Int? {
        state.withLock { $0.disabled[key] == nil && !$0.erasing.contains(key) ? $0.disablings[key, default: 0] : nil }
    }

    func beginErasure(key: String) async throws {
        state.withLock { state in
            guard state.erasing.insert(key).inserted else { return }
            state.disablings[key, default: 0] += 1
        }
    }

    func finishErasure(key: String) async throws {
        state.withLock { state in
            if let account = state.accounts.removeValue(forKey: key), account.provider == "local" {
                state.localKeys[EmailAddress(account.email).key] = nil
            }
            state.passwordHashes[key] = nil
            state.identities = state.identities.filter { $0.value != key }
            state.disabled[key] = nil
            state.erasing.remove(key)
        }
    }

    func pendingErasures() async throws -> [String] { state.withLock { $0.erasing.sorted() } }

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

    /// The local account with this address's key, else the first an identity provider named with it.
    private static func key(of emailKey: String, in state: State) -> String? {
        state.localKeys[emailKey]
            ?? state.accounts.values.filter { $0.provider != "local" && EmailAddress($0.email).key == emailKey }.map(\.key).min()
    }

    /// Nothing is announced: with no other replica and no session listener, no cache holds the account.
    func upsertExternal(_ account: Account) async throws {
        state.withLock { state in
            guard var stored = state.accounts[account.key] else {
                state.accounts[account.key] = account
                return
            }
            stored.email = account.email
            stored.firstName = account.firstName
            stored.lastName = account.lastName
            state.accounts[account.key] = stored
        }
    }
}
