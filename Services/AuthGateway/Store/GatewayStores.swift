import ServiceKit

/// The stores of schema `auth` that identity, sessions and the write limit stand on: in PostgreSQL, shared by every replica,
/// or in memory, for one process with no database (`GatewayParts.inMemory`).
struct GatewayStores: Sendable {
    let accounts: any AccountStore
    let sessions: any SessionStore
    let loginFailures: any LoginFailureStore
    let writeAllowances: any WriteAllowanceStore
    let signIns: any SignInStore

    static func postgres(_ database: Database, clock: any WallClock) -> GatewayStores {
        GatewayStores(
            accounts: PostgresAccountStore(database: database), sessions: PostgresSessionStore(database: database, clock: clock),
            loginFailures: PostgresLoginFailureStore(database: database),
            writeAllowances: PostgresWriteAllowanceStore(database: database), signIns: PostgresSignInStore(database: database))
    }

    /// Sessions expire by `clock`. An erased account is forgotten by every store, as `auth.erase_account`
    /// deletes it from every table.
    static func inMemory(clock: any WallClock) -> GatewayStores {
        let loginFailures = MemoryLoginFailureStore()
        let writeAllowances = MemoryWriteAllowanceStore()
        let signIns = MemorySignInStore()
        let accounts = MemoryAccountStore { key, account in
            if let account { loginFailures.forget(subject: LoginThrottle.accountSubject(EmailAddress(account.email))) }
            writeAllowances.forget(account: key)
            signIns.forgetHandoffs(accountKey: key)
        }
        return GatewayStores(
            accounts: accounts, sessions: MemorySessionStore(accounts: accounts, clock: clock), loginFailures: loginFailures,
            writeAllowances: writeAllowances, signIns: signIns)
    }
}
