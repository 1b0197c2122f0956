import Hummingbird
import Prometheus
import ServiceKit

/// `/healthz` and `/readyz` (database reachable, schema current), open to orchestrators, and `/metrics`,
/// which like everything else this service tells needs the internal token.
struct HealthController<Context: RequestContext>: Sendable {
    let database: Database
    let registry: PrometheusCollectorRegistry
    let token: InternalToken

    func addRoutes(to router: Router<Context>) {
        router.addHealthRoutes { [database] in
            [await Migrator.problem(database, schema: Migrations.schema, migrations: Migrations.all)].compactMap { $0 }
        }
        router.group().add(middleware: InternalTokenMiddleware(token: token)).addMetricsRoute(registry: registry)
    }
}
