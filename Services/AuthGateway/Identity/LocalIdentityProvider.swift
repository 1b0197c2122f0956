import HummingbirdBcrypt
import Logging
import NIOPosix

/// Accounts kept in PostgreSQL with bcrypt password hashes.
struct LocalIdentityProvider: IdentityProvider {
    let accounts: AccountStore
    let cost: UInt8
    let logger: Logger

    var allowsSignUp: Bool { true }

    /// A hash of nothing in particular, verified when the email is unknown so both answers take as long.
    private static let decoy = Bcrypt.hash("decoy password", cost: 10)

    func authenticate(username: String, password: String) async throws(LoginError) -> Account {
        let found: (account: Account, passwordHash: String)?
        do {
            found = try await accounts.local(email: username)
        } catch {
            logger.error("account lookup failed", metadata: ["error": "\(String(reflecting: error))"])
            throw .internalFailure
        }
        let hash = found?.passwordHash ?? Self.decoy
        let matches = (try? await Self.verify(password, hash: hash)) ?? false
        guard matches, let account = found?.account else { throw .invalidCredentials }
        return account
    }

    func hash(_ password: String) async throws -> String {
        try await NIOThreadPool.singleton.runIfActive { [cost] in Bcrypt.hash(password, cost: cost) }
    }

    /// bcrypt is deliberately slow: it runs on the blocking pool, never on an event loop.
    static func verify(_ password: String, hash: String) async throws -> Bool {
        try await NIOThreadPool.singleton.runIfActive { Bcrypt.verify(password, hash: hash) }
    }
}
