import AsyncHTTPClient
import Hummingbird
import OnTheMapShared
import Prometheus
import ServiceKit

/// `/healthz` (the process answers), `/readyz` (database migrated and locations-service ready) and
/// `/metrics` (Prometheus text).
struct GatewayHealthController: Sendable {
    let database: Database
    let locations: LocationsClient
    let registry: PrometheusCollectorRegistry

    func addRoutes(to router: Router<GatewayRequestContext>) {
        router.get("healthz") { _, _ in Response.json(Array(#"{"status":"ok"}"#.utf8)) }
        router.get("readyz", use: ready)
        router.get("metrics") { _, _ in
            var buffer: [UInt8] = []
            registry.emit(into: &buffer)
            return Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                            body: .init(byteBuffer: .init(bytes: buffer)))
        }
    }

    @Sendable func ready(_ request: Request, context: GatewayRequestContext) async throws -> Response {
        var problems: [String] = []
        do {
            if try await !Migrator.isCurrent(database, schema: Migrations.schema, migrations: Migrations.all) {
                problems.append("database migrations are not applied")
            }
        } catch {
            problems.append("database unreachable")
        }
        do {
            let answer = try await locations.send(method: .GET, path: "/readyz", query: nil, headers: [:], body: nil,
                                                  actor: nil, requestID: context.requestID)
            if answer.status != 200 { problems.append("locations-service not ready") }
        } catch {
            problems.append("locations-service unreachable")
        }
        guard problems.isEmpty else {
            var json = JSONWriter()
            json.beginObject()
            json.field("status", "unavailable")
            json.field("reason", problems.joined(separator: "; "))
            json.endObject()
            return Response.json(json.bytes, status: .serviceUnavailable)
        }
        return Response.json(Array(#"{"status":"ready"}"#.utf8))
    }
}
