import Hummingbird
import Logging
import OnTheMapShared
import PostgresNIO
import PreparedHTTP
import Prometheus
import ServiceKit
import ServiceLifecycle

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
    var parts = ServiceParts(
        client: client, registry: registry, logger: logger, mapCacheSize: configuration.mapCacheSize,
        pinsPerStudent: configuration.pinsPerStudent)
    parts.backupStanza = configuration.backupStanza
    parts.ledger = configuration.restoreLedger
    let token = InternalToken(configuration.internalToken)
    let counters = RequestCounters(registry: registry)
    let routes = buildRouter(parts, token: token, counters: counters, registry: registry)
    let table = routes.table()
    var services: [any Service] = [client, parts.cache, parts.posts, parts.notifier, MemoryReturn()]
    // First, so stopped last: the spans of the work the others finish on their way out are sent too.
    if let exporter = RequestTracing.exporter { services.insert(exporter, at: 0) }
    var app = Application(
        responder: routes.responder(),
        server: .http1(
            serverName: "locations-service", counters: counters, logger: logger, limits: configuration.limits,
            // Every request this service serves carries the internal token: its caller's trace is taken.
            prepared: RequestTracing.traced(table.answer, trustedCallers: nil)),
        configuration: .init(address: .hostname(configuration.host, port: configuration.port)),
        // Stopped in reverse order: the server drains its requests, then the writers their queue, the cache
        // refuses whoever still waits for a list, and the pool closes.
        services: services,
        logger: logger)
    app.beforeServerStarts {
        try await Migrations.migrator(client, logger: logger).migrate()
        try await PinCap.configure(configuration.pinsPerStudent, on: client, logger: logger)
    }
    return app
}

/// The routes and their middleware: what a request meets once the server has read it, and how the hot read
/// is answered before the router. Router-level tests use it alone, without a server, and without a database
/// for what needs none.
func buildRouter(
    _ parts: ServiceParts, token: InternalToken, counters: RequestCounters, registry: PrometheusCollectorRegistry
) -> PreparedRoutes<BasicRequestContext> {
    let router = Router(context: BasicRequestContext.self)
    let routes = PreparedRoutes(router)
    router.middlewares.add(RequestTracingMiddleware(trustedCallers: nil))
    router.middlewares.add(RequestIDMiddleware())
    router.middlewares.add(LogRequestsMiddleware(.debug))
    router.middlewares.add(RequestCountingMiddleware(counters))
    router.middlewares.add(ParseErrorMiddleware())
    HealthController(database: parts.database, registry: registry, token: token, backupStanza: parts.backupStanza).addRoutes(to: router)
    let locations = routes.group("v1/StudentLocation").add(middleware: InternalTokenMiddleware(token: token))
    ChangesController(log: parts.log, watch: parts.watch).addRoutes(to: locations)
    let controller = LocationsController<BasicRequestContext>(
        commands: parts.commands, cache: parts.cache, token: token, maps: parts.maps, mapLists: parts.mapLists, ledger: parts.ledger)
    controller.addRoutes(to: locations, routes: routes)
    let v1 = routes.group("v1").add(middleware: InternalTokenMiddleware(token: token))
    controller.addFeed(to: v1)
    controller.addErasure(to: v1)
    MapsController(maps: parts.maps, ledger: parts.ledger).addRoutes(to: v1.group("maps"))
    // Each class map's pins, under the map's own path (`/maps/{slug}/v1/...`), on the same routes.
    let map = routes.group("maps/:slug/v1").add(middleware: InternalTokenMiddleware(token: token))
    controller.addFeed(to: map)
    let mapLocations = map.group("StudentLocation")
    ChangesController(log: parts.log, watch: parts.watch).addRoutes(to: mapLocations)
    controller.addMapRoutes(to: mapLocations, routes: routes)
    return routes
}

/// The service's parts over one database client: the log, the read model, the cache kept coherent across
/// replicas, and the commands that write. With `log` given, the pins live there instead (the tests'
/// `ServiceParts.inMemory`).
struct ServiceParts {
    let database: Database
    let log: any LocationLog
    let cache: LatestLocationsCache
    let watch: LogWatch
    let notifier: ChangeNotifier
    /// The group commit of new pins (idle over a log of another kind).
    let posts: PostAppender
    let commands: LocationCommands
    /// The pgBackRest stanza whose last backup `/metrics` reports (`BACKUP_STANZA`); nil: none.
    var backupStanza: String? = nil
    /// Where a map moderator's hides and unhides and a map's deletion are recorded (`RESTORE_LEDGER`).
    var ledger: RestoreLedger? = nil
    /// Class maps: who may do what on each, their lives as events, and their newest pins kept ready.
    let maps: MapCommands
    let mapLists: MapListCaches

    init(
        client: PostgresClient, registry: PrometheusCollectorRegistry, logger: Logger, log: (any LocationLog)? = nil,
        clock: any WallClock = SystemClock(), mapCacheSize: Int = ServiceConfiguration.defaultMapCacheSize,
        pinsPerStudent: Int = PinCap.defaultPinsPerStudent
    ) {
        let database = Database(client: client, logger: logger)
        let events = EventStore(database: database)
        let posts = PostAppender(events: events)
        let log = log ?? PostgresLocationLog(events: events, posts: posts, readModel: ReadModel(database: database))
        let cache = LatestLocationsCache { try await log.pins(.latest) }
        let mapLists = MapListCaches(capacity: mapCacheSize) { map in
            var latest = PinQuery.latest
            latest.map = map
            return CachedJSON(tagging: StudentLocationList(results: try await log.pins(latest)).json)
        }
        let mapStore = MapStore(database: database)
        // Several readers a map: its members, and anyone of a public map.
        let mapAccess = MapAccessCache(capacity: mapCacheSize * 8) { key in KnownAccess(try await mapStore.access(cachedAs: key)) }
        let watch = LogWatch()
        let listening = registry.makeGauge(
            descriptor: MetricNameDescriptor(
                namespace: "onthemap", metricName: "change_listener_connected", unitName: "",
                helpText: "1 while this replica receives change notifications, so its cached list can be trusted."))
        let notifier = ChangeNotifier(
            client: client, logger: logger,
            onChange: {
                cache.invalidate()
                mapLists.invalidate()
                mapAccess.invalidate()
                watch.notify()
            },
            onConnectionChange: { connected in
                cache.setCoherent(connected)
                mapLists.setCoherent(connected)
                mapAccess.setCoherent(connected)
                listening.set(connected ? 1.0 : 0.0)
            })
        let appended = registry.makeCounter(
            descriptor: MetricNameDescriptor(
                namespace: "onthemap", metricName: "events_appended", unitName: "total", helpText: "Events appended to the log by this replica."))
        self.database = database
        self.log = log
        self.cache = cache
        self.watch = watch
        self.notifier = notifier
        self.posts = posts
        let didAppend: @Sendable () -> Void = {
            cache.invalidate()
            mapLists.invalidate()
            mapAccess.invalidate()
            watch.notify()
            notifier.announce()
            appended.increment()
        }
        self.commands = LocationCommands(log: log, didAppend: didAppend, clock: clock)
        self.mapLists = mapLists
        self.maps = MapCommands(
            store: mapStore, didAppend: didAppend, clock: clock, defaultPinsPerStudent: pinsPerStudent, accessCache: mapAccess)
    }
}
