import Hummingbird
import OnTheMapShared
import Prometheus

extension Router {
    /// `/healthz` (the process answers), `/readyz` (the service can do its work: `problems` returns
    /// nothing) and `/metrics` (Prometheus text), the same on every service. They need no credentials:
    /// orchestrators and scrapers call them.
    public func addOperationalRoutes(registry: PrometheusCollectorRegistry,
                                     problems: @escaping @Sendable () async -> [String]) {
        get("healthz") { _, _ in Response.json(Array(#"{"status":"ok"}"#.utf8)) }
        get("readyz") { _, _ in
            let found = await problems()
            guard found.isEmpty else {
                var json = JSONWriter()
                json.beginObject()
                json.field("status", "unavailable")
                json.field("reason", found.joined(separator: "; "))
                json.endObject()
                return Response.json(json.bytes, status: .serviceUnavailable)
            }
            return Response.json(Array(#"{"status":"ready"}"#.utf8))
        }
        get("metrics") { _, _ in
            var buffer: [UInt8] = []
            registry.emit(into: &buffer)
            return Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                            body: .init(byteBuffer: .init(bytes: buffer)))
        }
    }
}

extension Migrator {
    /// The readiness problem of a schema, if any: unreachable, or not migrated.
    public static func problem(_ database: Database, schema: String, migrations: [Migration]) async -> String? {
        do {
            return try await isCurrent(database, schema: schema, migrations: migrations) ? nil : "database migrations are not applied"
        } catch {
            return "database unreachable"
        }
    }
}
