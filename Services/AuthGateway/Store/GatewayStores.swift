import ServiceKit

/// The stores of schema `auth` that identity and sessions stand on, in PostgreSQL, shared by every replica.
struct GatewayStores: Sendable {
    let accounts: any AccountStore
    let sessions: any SessionStore
    let loginFailures: any LoginFailureStore

    static func postgres(_ database: Database, clock: any WallClock) -> GatewayStores {
        GatewayStores(
            accounts: PostgresAccountStore(database: database), sessions: PostgresSessionStore(database: database, clock: clock),
            loginFailures: PostgresLoginFailureStore(database: database))
    }
}
