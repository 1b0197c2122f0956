import ServiceKit

/// The stores of schema `auth` that identity, sessions and the write limit stand on: in PostgreSQL, shared by every replica,
/// or, in the tests, in memory (module `ServiceTwins`).
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
}
