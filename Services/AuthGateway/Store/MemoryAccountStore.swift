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
