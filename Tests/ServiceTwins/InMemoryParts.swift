#if DEBUG
import Logging
import PostgresNIO
import Prometheus
import ServiceKit

@testable import AuthGateway
@testable import LocationsService

extension GatewayStores {
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

extension GatewayParts {
    /// The parts over accounts, sessions and login failures in memory, with a database client that never
    /// connects: the health routes answer as in an outage. With no other replica there is nothing to hear,
    /// so no session listener: the session cache holds nothing and every lookup asks the store.
    static func inMemory(
        _ configuration: GatewayConfiguration, registry: PrometheusCollectorRegistry,
        clock: any WallClock = SystemClock(), logger: Logger, hop: (any LocationsHop)? = nil
    ) -> GatewayParts {
        GatewayParts(
            configuration, database: Database(client: nowhereDatabase(logger), logger: logger), stores: .inMemory(clock: clock),
            listeningOn: nil, registry: registry, clock: clock, logger: logger, hop: hop)
    }
}

extension ServiceParts {
    /// The parts over pins in `log`, with a database client that never connects: the health routes answer
    /// as in an outage.
    static func inMemory(
        _ log: MemoryLocationLog, registry: PrometheusCollectorRegistry, logger: Logger, clock: any WallClock = SystemClock()
    ) -> ServiceParts {
        let parts = ServiceParts(client: nowhereDatabase(logger), registry: registry, logger: logger, log: log, clock: clock)
        // No other replica writes to these pins, so the cache needs no change listener to be trusted.
        parts.cache.setCoherent(true)
        parts.mapLists.setCoherent(true)
        parts.maps.accessCache?.setCoherent(true)
        return parts
    }
}

/// A database client that never connects (nothing listens on port 9): what the parts in memory are given
/// for the routes that ask the database themselves, which answer as in an outage.
func nowhereDatabase(_ logger: Logger) -> PostgresClient {
    PostgresClient(
        configuration: .init(host: "127.0.0.1", port: 9, username: "nobody", password: nil, database: nil, tls: .disable),
        backgroundLogger: logger)
}
#endif
