import Hummingbird
import Prometheus
import ServiceKit

/// `/healthz`, `/readyz` (database migrated and locations-service ready) and `/metrics`.
struct GatewayHealthController: Sendable {
    let database: Database
    let locations: LocationsClient
    let registry: PrometheusCollectorRegistry

    func addRoutes(to router: Router<GatewayRequestContext>) {
        router.addOperationalRoutes(registry: registry) { [database, locations] in
            var problems = [await Migrator.problem(database, schema: Migrations.schema, migrations: Migrations.all)].compactMap { $0 }
            do {
                let answer = try await locations.send(
                    method: .GET, path: "/readyz", query: nil, headers: [:], body: nil,
                    actor: nil, requestID: "readiness")
                if answer.status != 200 { problems.append("locations-service not ready") }
            } catch {
                problems.append("locations-service unreachable")
            }
            return problems
        }
    }
}
