import HummingbirdBcrypt
import Logging
import NIOPosix
import ServiceKit

/// Accounts kept in the account store (PostgreSQL) with bcrypt password hashes.
struct LocalIdentityProvider: IdentityProvider {
    let accounts: any AccountStore
    let cost: UInt8
    let logger: Logger
    /// A hash of nothing in particular, verified when the email is unknown so both answers take as long:
    /// made at the cost real passwords are hashed at, once, since making one costs as much as a login.
    private let decoy: String

    /// bcrypt reads only the first 72 bytes of a password: any longer one would be cut short silently,
    /// and every password sharing those 72 bytes would log in.
    static let maximumPasswordBytes = 72

    init(accounts: any AccountStore, cost: UInt8, logger: Logger) {
        self.accounts = accounts
        self.cost = cost
        self.logger = logger
        decoy = Bcrypt.hash("decoy password", cost: cost)
    }

    var allowsSignUp: Bool { true }
    var acceptsFacebook: Bool { false }

    func authenticate(_ credential: Credential) async throws(LoginError) -> Account {
        guard case .password(let username, let password) = credential else { throw .invalidCredentials }
        let found: (account: Account, passwordHash: String)?
        do {
            found = try await accounts.local(emailKey: username.key)
        } catch  where Database.isOutage(error) {
            throw .storeUnavailable
        } catch {
            logger.error("account lookup failed", metadata: ["error": "\(String(reflecting: error))"])
            throw .internalFailure
        }
        // Verified even when the password is too long to be anyone's, so that answer takes as long too.
        let matches = (try? await Self.verify(password, hash: found?.passwordHash ?? decoy)) ?? false
        guard matches, password.utf8.count <= Self.maximumPasswordBytes, let account = found?.account else { throw .invalidCredentials }
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
