import Hummingbird
import Prometheus
import ServiceKit

/// `/healthz`, `/readyz` (database reachable, schema current) and `/metrics`.
struct HealthController<Context: RequestContext>: Sendable {
    let database: Database
    let registry: PrometheusCollectorRegistry

    func addRoutes(to router: Router<Context>) {
        router.addOperationalRoutes(registry: registry) { [database] in
            [await Migrator.problem(database, schema: Migrations.schema, migrations: Migrations.all)].compactMap { $0 }
        }
    }
}
