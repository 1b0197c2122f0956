import Hummingbird
import OnTheMapShared
import Prometheus

extension Router {
    /// `/healthz`, `/readyz` and `/metrics`, all without credentials: for a service whose port is public
    /// anyway, such as the gateway.
    public func addOperationalRoutes(registry: PrometheusCollectorRegistry,
                                     problems: @escaping @Sendable () async -> [String]) {
        addHealthRoutes(problems: problems)
        addMetricsRoute(registry: registry)
    }
}

extension RouterMethods {
    /// `/healthz` (the process answers) and `/readyz` (the service can do its work: `problems` returns
    /// nothing), the same on every service. They need no credentials: orchestrators call them.
    public func addHealthRoutes(problems: @escaping @Sendable () async -> [String]) {
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
    }

    /// `/metrics` (Prometheus text), behind whatever middleware the group it is added to carries.
    public func addMetricsRoute(registry: PrometheusCollectorRegistry) {
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
