import Hummingbird
import Logging
import OnTheMapShared
import PostgresNIO
import Prometheus
import ServiceKit

/// The running service's parts, wired together. Tests build it with their own configuration.
func buildApplication(
    _ configuration: ServiceConfiguration,
    registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry(),
    logger baseLogger: Logger? = nil
) -> some ApplicationProtocol {
    var configuredLogger = baseLogger ?? Logger(label: "locations-service")
    configuredLogger.logLevel = configuration.logLevel
    let logger = configuredLogger
    let client = PostgresClient(configuration: configuration.database.configuration, backgroundLogger: logger)
    let database = Database(client: client, logger: logger)
    let readModel = ReadModel(database: database)
    let cache = LatestLocationsCache { try await readModel.pins(.latest) }
    let watch = LogWatch()
    let listening = registry.makeGauge(
        descriptor: MetricNameDescriptor(
            namespace: "onthemap", metricName: "change_listener_connected", unitName: "",
            helpText: "1 while this replica receives change notifications, so its cached list can be trusted."))
    let notifier = ChangeNotifier(
        client: client, logger: logger,
        onChange: {
            cache.invalidate()
            watch.notify()
        },
        onConnectionChange: { connected in
            cache.setCoherent(connected)
            listening.set(connected ? 1.0 : 0.0)
        })
    let appended = registry.makeCounter(
        descriptor: MetricNameDescriptor(
            namespace: "onthemap", metricName: "events_appended", unitName: "total", helpText: "Events appended to the log by this replica."))
    let events = EventStore(database: database)
    let posts = PostAppender(events: events)
    let commands = LocationCommands(
        events: events, posts: posts, readModel: readModel,
        didAppend: {
            cache.invalidate()
            watch.notify()
            notifier.announce()
            appended.increment()
        })

    let router = Router(context: BasicRequestContext.self)
    router.middlewares.add(RequestIDMiddleware())
    router.middlewares.add(LogRequestsMiddleware(.debug))
    let counters = RequestCounters(registry: registry)
    router.middlewares.add(RequestCountingMiddleware(counters))
    router.middlewares.add(ParseErrorMiddleware())
    let token = InternalToken(configuration.internalToken)
    HealthController(database: database, registry: registry, token: token).addRoutes(to: router)
    let locations = router.group("v1/StudentLocation").add(middleware: InternalTokenMiddleware(token: token))
    ChangesController(events: events, watch: watch).addRoutes(to: locations)
    LocationsController(commands: commands, readModel: readModel, cache: cache).addRoutes(to: locations)

    let hotRead = HotRead(cache: cache, token: token)
    var app = Application(
        router: router,
        server: .http1(
            serverName: "locations-service", counters: counters, logger: logger, limits: configuration.limits,
            prepared: { hotRead.answer($0).map(PreparedHandling.answer) }),
        configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "locations-service"),
        // Stopped in reverse order: the server drains its requests, then the writers their queue, the cache
        // refuses whoever still waits for a list, and the pool closes.
        services: [client, cache, posts, notifier, MemoryReturn()],
        logger: logger)
    app.beforeServerStarts {
        try await Migrations.migrator(client, logger: logger).migrate()
    }
    return app
}
