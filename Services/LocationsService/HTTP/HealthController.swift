import Hummingbird
import Prometheus
import ServiceKit

/// `/healthz` and `/readyz` (database reachable, schema current), open to orchestrators, and `/metrics`,
/// which like everything else this service tells needs the internal token.
struct HealthController<Context: RequestContext>: Sendable {
    let database: Database
    let registry: PrometheusCollectorRegistry
    let token: InternalToken
    /// The pgBackRest stanza whose last backup `/metrics` reports (`BACKUP_STANZA`); nil: none.
    var backupStanza: String? = nil

    func addRoutes(to router: Router<Context>) {
        router.addHealthRoutes { [database] in
            [await Migrator.problem(database, schema: Migrations.schema, migrations: Migrations.all)].compactMap { $0 }
        }
        let positions = LogPositionGauges(registry: registry, readModel: ReadModel(database: database), events: EventStore(database: database))
        let backups = BackupGauges(registry: registry, database: database, stanza: backupStanza)
        router.group().add(middleware: InternalTokenMiddleware(token: token)).addMetricsRoute(registry: registry) {
            await positions.refresh()
            await backups.refresh()
        }
    }
}

/// Where the log and the read model stand, read when `/metrics` is asked: the log's head, how far its
/// followers may read, the pins in the read model, the position the last replay rebuilt it to, and the pins
/// the cap took off. Left as they were when the database is away.
struct LogPositionGauges: Sendable {
    let head: Gauge
    let followed: Gauge
    let pins: Gauge
    let replayed: Gauge
    let capped: Gauge
    let readModel: ReadModel
    let events: EventStore

    init(registry: PrometheusCollectorRegistry, readModel: ReadModel, events: EventStore) {
        func gauge(_ name: String, _ help: String) -> Gauge {
            registry.makeGauge(descriptor: MetricNameDescriptor(namespace: "onthemap", metricName: name, unitName: "", helpText: help))
        }
        head = gauge("event_log_head_position", "The position of the newest event in the log.")
        followed = gauge(
            "event_log_followed_position",
            "The position of the newest event the log's followers (live streams, caches, a replay's catch-up) may read: older transactions still open hold it back."
        )
        pins = gauge("read_model_pins", "Pins in the read model (the current state of every pin).")
        replayed = gauge("replay_checkpoint_position", "The log position the last replay rebuilt the read model to (0: never).")
        capped = gauge("pin_cap_removals", "Pins taken off the map because their student posted past PINS_PER_STUDENT, since the log began.")
        self.readModel = readModel
        self.events = events
    }

    func refresh() async {
        guard let standing = try? await readModel.standing() else { return }
        head.set(standing.head)
        pins.set(standing.pins)
        replayed.set(standing.replayed)
        capped.set(standing.capped)
        if let readable = try? await events.head() { followed.set(readable.position) }
    }
}
