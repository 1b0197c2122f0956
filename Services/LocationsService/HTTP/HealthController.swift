import Hummingbird
import Logging
import OnTheMapShared
import Prometheus
import ServiceKit

/// `/healthz` (the process answers), `/readyz` (it can do its work: database reachable, schema current)
/// and `/metrics` (Prometheus text). These need no internal token: orchestrators and scrapers call them.
struct HealthController<Context: RequestContext>: Sendable {
    let database: Database
    let registry: PrometheusCollectorRegistry

    func addRoutes(to router: Router<Context>) {
        router.get("healthz") { _, _ in Response.json(Array(#"{"status":"ok"}"#.utf8)) }
        router.get("readyz", use: ready)
        router.get("metrics") { _, _ in
            var buffer: [UInt8] = []
            registry.emit(into: &buffer)
            return Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                            body: .init(byteBuffer: .init(bytes: buffer)))
        }
    }

    @Sendable func ready(_ request: Request, context: Context) async throws -> Response {
        let problem: String?
        do {
            problem = try await Migrator.isCurrent(database, schema: Migrations.schema, migrations: Migrations.all) ? nil : "database migrations are not applied"
        } catch {
            problem = "database unreachable"
        }
        if let problem {
            var json = JSONWriter()
            json.beginObject()
            json.field("status", "unavailable")
            json.field("reason", problem)
            json.endObject()
            return Response.json(json.bytes, status: .serviceUnavailable)
        }
        return Response.json(Array(#"{"status":"ready"}"#.utf8))
    }
}
