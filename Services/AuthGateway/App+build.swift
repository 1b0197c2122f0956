import AsyncHTTPClient
import Geocoding
import Hummingbird
import HummingbirdCore
import Logging
import OnTheMapShared
import PostgresNIO
import PreparedHTTP
import Prometheus
import ServiceKit
import ServiceLifecycle
import WebClient

/// The gateway's parts, wired together. Tests build it with their own configuration (and `hop`, the
/// service behind it in memory).
func buildApplication(
    _ configuration: GatewayConfiguration,
    registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry(),
    clock: any WallClock = SystemClock(),
    logger baseLogger: Logger? = nil,
    hop: (any LocationsHop)? = nil
) throws -> some ApplicationProtocol {
    var configuredLogger = baseLogger ?? Logger(label: "auth-gateway")
    configuredLogger.logLevel = configuration.logLevel
    let logger = configuredLogger
    let client = PostgresClient(configuration: configuration.database.configuration, backgroundLogger: logger)
    let parts = GatewayParts(configuration, client: client, registry: registry, clock: clock, logger: logger, hop: hop)
    let counters = RequestCounters(registry: registry)
    let routes = try buildRouter(parts, configuration, counters: counters, registry: registry, logger: logger)
    let table = routes.table()
    let prepared = RequestTracing.traced(table.answer, trustedCallers: configuration.limits.trustedProxies)
    var services: [any Service] = [client]
    if let sessionAnnouncements = parts.sessionAnnouncements { services.append(sessionAnnouncements) }
    services += [
        HTTPClientService(client: parts.httpClient, internal: parts.internalHTTP), parts.feed, parts.mapFeeds, parts.erasures, MemoryReturn(),
    ]
    // First, so stopped last: the spans of the work the others finish on their way out are sent too.
    if let exporter = RequestTracing.exporter { services.insert(exporter, at: 0) }
    let server: HTTPServerBuilder
    if let certificates = configuration.tls {
        server = .https(
            serverName: "auth-gateway", counters: counters, logger: logger, limits: configuration.limits, certificates: certificates,
            prepared: prepared)
        services.append(certificates.reloadOnHangUp(logger: logger))
    } else {
        server = .http1(serverName: "auth-gateway", counters: counters, logger: logger, limits: configuration.limits, prepared: prepared)
    }
    var app = Application(
        responder: routes.responder(),
        server: server,
        configuration: .init(address: .hostname(configuration.host, port: configuration.port)),
        services: services,
        logger: logger)
    app.beforeServerStarts {
        try await Migrations.migrator(client, logger: logger).migrate()
    }
    return app
}

/// The routes and their middleware: what a request meets once the server has read it, and, for the routes
/// that declare one, how it is answered before the router (the default list, the writes, the live stream).
/// Router-level tests use it alone, without a server.
func buildRouter(
    _ parts: GatewayParts, _ configuration: GatewayConfiguration, counters: RequestCounters, registry: PrometheusCollectorRegistry,
    logger: Logger
) throws -> PreparedRoutes<GatewayRequestContext> {
    let router = Router(context: GatewayRequestContext.self)
    let prepared = PreparedRoutes(router)
    router.middlewares.add(RequestTracingMiddleware(trustedCallers: configuration.limits.trustedProxies))
    router.middlewares.add(RequestIDMiddleware())
    router.middlewares.add(ClientConnectionMiddleware(trustedProxies: configuration.limits.trustedProxies, tls: configuration.tls != nil))
    let routes = UnknownRouteMiddleware.Routes()
    router.middlewares.add(UnknownRouteMiddleware(routes: routes))
    router.middlewares.add(LogRequestsMiddleware(.debug))
    router.middlewares.add(RequestCountingMiddleware(counters))
    router.middlewares.add(ResponseCodingMiddleware())
    GatewayHealthController(database: parts.database, locations: parts.locations, registry: registry).addRoutes(to: router)
    try OpenAPIController.bundled().addRoutes(to: router)
    var page = WebClientFiles.PageSettings(
        tileURL: configuration.tileURL, identityProvider: configuration.identityProvider.rawValue,
        signUpURL: configuration.identityProvider == .udacity ? WebClientFiles.udacitySignUpURL : nil,
        signInProvider: configuration.oidc?.providerName)
    // The page's images come from the tile server, from this gateway's own archive, or (none) only from here.
    var tileOrigin = TileOrigin(configuration.tileURL)
    if let archive = configuration.basemapTiles {
        let tiles = BasemapTilesController(archive: archive)
        tiles.addRoutes(to: router)
        page.tileURL = tiles.urlTemplate
        page.tileMaxZoom = archive.header.maxZoom
        tileOrigin = nil
    }
    let webFiles = try WebClientFiles.load(
        clientDirectory: WebClientBundle.directory, leafletDirectory: configuration.leafletDirectory,
        page: page, logger: logger)
    WebClientController(files: webFiles, tiles: tileOrigin).addRoutes(to: router)

    let cookies = SessionCookies(domain: configuration.cookieDomain)
    // The session and users routes answer under every class map's base URL too (`/maps/{slug}/v1/session`):
    // an app pointed at a class map logs in where it posts. One login serves every map.
    for base in ["v1", "api", "maps/:slug/v1", "maps/:slug/api"] {
        let session = router.group("\(base)/session").add(middleware: GatewayErrorMiddleware(style: .session(prefixed: true)))
            .add(middleware: MapSlugMiddleware())
        SessionController(sessions: parts.sessions, lifetime: configuration.sessionLifetime, cookies: cookies).addRoutes(to: session)
        let users = router.group("\(base)/users").add(middleware: GatewayErrorMiddleware(style: .session(prefixed: true)))
            .add(middleware: MapSlugMiddleware())
        UsersController(accounts: parts.accounts, sessions: parts.sessions).addRoutes(to: users)
    }
    SignInController(signIn: parts.signIn, lifetime: configuration.sessionLifetime, cookies: cookies).addRoutes(
        pages: router.group("v1/auth/oidc").add(middleware: GatewayErrorMiddleware(style: .page)),
        api: router.group("v1/auth/oidc").add(middleware: GatewayErrorMiddleware(style: .session(prefixed: true))))
    let signUp = router.group("v1/accounts").add(middleware: GatewayErrorMiddleware(style: .session(prefixed: false)))
    let local = parts.local
    AccountsController(
        accounts: parts.accounts, provider: parts.provider, sessions: parts.sessions, erasures: parts.erasures, cookies: cookies,
        hash: { try await local.hash($0) }
    )
    .addRoutes(to: signUp)

    let upstreamGeocoder: (any Geocoder)? = configuration.geocoderURL.map {
        NominatimGeocoder(baseURL: $0, httpClient: parts.httpClient, timeout: configuration.upstreamTimeout)
    }
    GeocodeController(gazetteer: try Gazetteer.bundled(), upstream: upstreamGeocoder, logger: logger)
        .addRoutes(to: router.group("v1/geocode").add(middleware: GatewayErrorMiddleware(style: .session(prefixed: false))))
    parts.events.addRoutes(
        to: prepared.group("v1/StudentLocation").add(middleware: GatewayErrorMiddleware(style: .parse)), routes: prepared)
    let proxy = LocationsProxyController(locations: parts.locations, writes: parts.writes, latest: parts.latest)
    for (path, legacy) in LocationsProxyController.mounts {
        proxy.addRoutes(
            to: prepared.group(RouterPath(path)).add(middleware: GatewayErrorMiddleware(style: .parse)), routes: prepared, legacyParse: legacy)
    }
    proxy.addFeed(to: prepared.group("v1").add(middleware: CrossOriginMiddleware()).add(middleware: GatewayErrorMiddleware(style: .parse)))
    MapsProxyController(
        locations: parts.locations, writes: parts.writes, sessions: parts.sessions, limit: parts.writes.limit,
        trustedProxies: configuration.limits.trustedProxies, siteDomain: configuration.cookieDomain, creators: configuration.mapCreators,
        feeds: parts.mapFeeds, resumeWindow: configuration.liveResumeEvents
    )
    .addRoutes(to: router, routes: prepared)
    routes.know(prepared.table())
    return prepared
}

/// The gateway's parts over one database client: identity and sessions, the clients of the services
/// behind it, the latest-list cache and the live feed, the write path that forwards pins and the live stream.
/// `hop` stands in for the connections to locations-service (router-level tests); the tests'
/// `GatewayParts.inMemory` (module `ServiceTwins`) keeps accounts, sessions and login failures in memory.
struct GatewayParts {
    let database: Database
    /// For the outside services (Udacity, Facebook, a geocoder); locations-service has a client of its own.
    let httpClient: HTTPClient
    let accounts: any AccountStore
    let local: LocalIdentityProvider
    let provider: any IdentityProvider
    let sessions: Sessions
    /// Hears of sessions ended and accounts renamed on any replica (`LISTEN auth_sessions`); there is none
    /// without a database.
    let sessionAnnouncements: ChannelListener?
    let internalHTTP: InternalHTTPClient
    let locations: LocationsClient
    let latest: LatestListCache
    let feed: LiveFeed
    /// The class maps' changes, followed at once: their lists kept at the gateway, and their live streams.
    let mapFeeds: MapFeeds
    let writes: LocationWriteForwarder
    let events: EventsController
    let erasures: Erasures
    /// Sign-in with the OpenID Connect provider, when one is configured.
    let signIn: OIDCSignIn?

    init(
        _ configuration: GatewayConfiguration, client: PostgresClient, registry: PrometheusCollectorRegistry,
        clock: any WallClock = SystemClock(), logger: Logger, hop: (any LocationsHop)? = nil
    ) {
        let database = Database(client: client, logger: logger)
        self.init(
            configuration, database: database, stores: .postgres(database, clock: clock), listeningOn: client, registry: registry,
            clock: clock, logger: logger, hop: hop)
    }

    /// With `listeningOn`, the session cache follows what every replica announces on that client.
    init(
        _ configuration: GatewayConfiguration, database: Database, stores: GatewayStores, listeningOn client: PostgresClient?,
        registry: PrometheusCollectorRegistry, clock: any WallClock, logger: Logger, hop: (any LocationsHop)?
    ) {
        self.database = database
        // At most 8 connections to each outside host; further requests wait for one.
        var clientConfiguration = HTTPClient.Configuration(
            timeout: .init(connect: .seconds(1), read: .seconds(10)),
            connectionPool: .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: 8))
        // Nothing collects traces: with no tracer the client skips making a span for each request (which
        // parses its URL a second time for the span's attributes).
        clientConfiguration.tracing.tracer = nil
        httpClient = HTTPClient(eventLoopGroupProvider: .singleton, configuration: clientConfiguration)

        accounts = stores.accounts
        local = LocalIdentityProvider(accounts: accounts, cost: configuration.passwordCost, logger: logger)
        let configured: any IdentityProvider =
            switch configuration.identityProvider {
            case .local: local
            case .udacity:
                UdacityIdentityProvider(
                    baseURL: configuration.udacityBaseURL ?? "", httpClient: httpClient,
                    accounts: accounts, timeout: .init(configuration.upstreamTimeout), logger: logger)
            }
        // With a Facebook app of its own, the gateway checks Facebook logins itself, whatever the provider.
        if let facebook = configuration.facebook {
            provider = FacebookIdentityProvider(
                graph: FacebookGraph(
                    settings: facebook, httpClient: httpClient, timeout: .init(configuration.upstreamTimeout), clock: clock, logger: logger),
                others: configured, accounts: accounts, logger: logger)
        } else {
            provider = configured
        }
        let sessionCache = SessionCache(clock: clock)
        let sessions = Sessions(
            provider: provider, store: stores.sessions, cache: sessionCache,
            throttle: LoginThrottle(failures: stores.loginFailures, policy: configuration.throttle, clock: clock),
            lifetime: configuration.sessionLifetime, logger: logger)
        self.sessions = sessions
        sessionAnnouncements = client.map { client in
            let hearing = registry.makeGauge(
                descriptor: MetricNameDescriptor(
                    namespace: "onthemap", metricName: "session_listener_up", unitName: "",
                    helpText: "1 while this replica hears sessions ended elsewhere (its LISTEN connection is up), else 0."))
            return ChannelListener(
                client: client, channel: SessionCache.channel, logger: logger,
                onNotification: { sessionCache.heard($0) },
                onConnectionChange: { [writeAllowances = stores.writeAllowances] listening in
                    writeAllowances.listeningChanged(listening)
                    await sessions.listeningChanged(listening)
                    hearing.set(listening ? 1.0 : 0.0)
                })
        }
        internalHTTP = InternalHTTPClient(endpoint: configuration.locationsURL)
        locations = LocationsClient(
            internalToken: configuration.internalToken, http: hop ?? internalHTTP, timeout: .seconds(5), logger: logger)
        latest = LatestListCache()
        let openStreams = registry.makeGauge(
            descriptor: MetricNameDescriptor(
                namespace: "onthemap", metricName: "live_streams", unitName: "", helpText: "Live streams open on this replica."))
        feed = LiveFeed(
            locations: locations, cache: latest, logger: logger, heartbeatInterval: configuration.liveHeartbeat,
            streamsPerAddress: configuration.streamsPerClient, openStreams: openStreams)
        let mapLists = ClassMapLists(capacity: configuration.mapCacheSize)
        mapFeeds = MapFeeds(
            locations: locations, lists: mapLists, logger: logger,
            heartbeatInterval: configuration.liveHeartbeat, streamsPerAddress: configuration.streamsPerClient)
        writes = LocationWriteForwarder(
            locations: locations, sessions: sessions, latest: latest, mapLists: mapLists,
            limit: WriteLimit(allowances: stores.writeAllowances, policy: configuration.writeLimit, clock: clock),
            trustedProxies: configuration.limits.trustedProxies, siteDomain: configuration.cookieDomain)
        events = EventsController(
            feed: feed, locations: locations, trustedProxies: configuration.limits.trustedProxies, resumeWindow: configuration.liveResumeEvents)
        erasures = Erasures(
            accounts: accounts, sessions: sessions, locations: locations, latest: latest, ledger: configuration.restoreLedger, logger: logger)
        if let settings = configuration.oidc {
            signIn = OIDCSignIn(
                issuer: OIDCIssuer(settings: settings, httpClient: httpClient, timeout: .init(configuration.upstreamTimeout), logger: logger),
                store: stores.signIns, accounts: stores.accounts, sessions: sessions, clock: clock, logger: logger)
        } else {
            signIn = nil
        }
    }
}
