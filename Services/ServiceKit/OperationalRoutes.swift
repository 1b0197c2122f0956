import Hummingbird
import Metrics
import OnTheMapShared
import Prometheus

extension Router {
    /// `/healthz`, `/readyz` and `/metrics`, all without credentials: for a service whose port is public
    /// anyway, such as the gateway.
    public func addOperationalRoutes(
        registry: PrometheusCollectorRegistry,
        problems: @escaping @Sendable () async -> [String]
    ) {
        addHealthRoutes(problems: problems)
        addMetricsRoute(registry: registry)
    }
}

extension RouterMethods {
    /// `/healthz` (the process answers) and `/readyz` (the service can do its work: `problems` returns
    /// nothing), the same on every service. They need no credentials: orchestrators call them.
    public func addHealthRoutes(problems: @escaping @Sendable () async -> [String]) {
        get("healthz") { _, _ in Response.json(ByteBuffer(string: #"{"status":"ok"}"#)) }
        get("readyz") { _, _ in
            let found = await problems()
            guard found.isEmpty else {
                var json = JSONWriter()
                json.beginObject()
                json.field("status", "unavailable")
                json.field("reason", found.joined(separator: "; "))
                json.endObject()
                return Response.json(json.buffer, status: .serviceUnavailable)
            }
            return Response.json(ByteBuffer(string: #"{"status":"ready"}"#))
        }
    }

    /// `/metrics` (Prometheus text), behind whatever middleware the group it is added to carries.
    /// `refresh` sets the gauges that are read rather than kept up to date (a position in the database);
    /// the process's memory and descriptors are read the same way.
    public func addMetricsRoute(registry: PrometheusCollectorRegistry, refresh: @escaping @Sendable () async -> Void = {}) {
        let process = ProcessGauges(registry: registry)
        get("metrics") { _, _ in
            process.refresh()
            await refresh()
            var buffer: [UInt8] = []
            registry.emit(into: &buffer)
            return Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: .init(byteBuffer: .init(bytes: buffer)))
        }
    }
}

/// swift-metrics writes into `registry` (what `/metrics` shows), through `metricsFactory(registry)`.
public func bootstrapMetrics(_ registry: PrometheusCollectorRegistry) {
    MetricsSystem.bootstrap(metricsFactory(registry))
}

/// Metrics written into `registry`, with histogram buckets from a quarter of a millisecond (a hot read) to
/// 10 s (a query deadline is 2 s, a call to another service 5 s).
public func metricsFactory(_ registry: PrometheusCollectorRegistry) -> PrometheusMetricsFactory {
    var factory = PrometheusMetricsFactory(registry: registry)
    factory.defaultDurationHistogramBuckets = [
        .microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2.5), .milliseconds(5), .milliseconds(10),
        .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1),
        .seconds(2.5), .seconds(5), .seconds(10),
    ]
    return factory
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
