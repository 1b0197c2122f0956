#if DEBUG
import Foundation
import Hummingbird
import HummingbirdTesting
import NIOCore
import NIOEmbedded
import Prometheus
import ServiceKit
import TestSupport

@testable import AuthGateway
@testable import LocationsService

/// Where the router-level gateway keeps accounts, sessions and login failures. What the stores decide
/// (expiry, throttle windows, one account per address) is tested over both.
enum GatewayStoresKind: String, CaseIterable, Sendable {
    case memory, postgres
}

/// The gateway's router alone, without a server, with locations-service's router over pins in memory
/// behind its hop: every route as the gateway answers it. Accounts, sessions and login failures are in
/// memory (`GatewayParts.inMemory`; each request comes from `peer`, as from a socket's) or, `over: .postgres`,
/// on a fresh database (with no peer address). Without a database, `/readyz` answers as in an outage.
/// Each student may have `pinsPerStudent` pins on the map. Both routers tell the time by `clock`.
func withGatewayRouter(
    over stores: GatewayStoresKind = .memory,
    clock: any WallClock = SystemClock(),
    peer: String = "127.0.0.1",
    pinsPerStudent: Int = defaultPinsPerStudent,
    configure: @Sendable (inout GatewayConfiguration) -> Void = { _ in },
    _ body: @escaping @Sendable (any TestClientProtocol, MemoryLocations) async throws -> Void
) async throws {
    if stores == .postgres {
        return try await withBuiltGateway(.router, clock: clock, pinsPerStudent: pinsPerStudent, configure: configure, body)
    }
    var configuration = try testGatewayConfiguration(database: "postgres://nobody@127.0.0.1:9/nothing", locations: "http://127.0.0.1:9")
    configure(&configuration)
    let registry = PrometheusCollectorRegistry()
    let address = try SocketAddress(ipAddress: peer, port: 40_000)
    try await withMemoryLocations(pinsPerStudent: pinsPerStudent, clock: clock) { locations in
        let parts = GatewayParts.inMemory(configuration, registry: registry, clock: clock, logger: TestDatabase.logger, hop: locations)
        let router = try buildRouter(
            parts, configuration, counters: RequestCounters(registry: registry), registry: registry, logger: TestDatabase.logger)
        let responder = FromPeer(router: router.router.buildResponder(), peer: address)
        do {
            try await Application(responder: responder).test(.router) { try await body($0, locations) }
        } catch {
            try await parts.httpClient.shutdown()
            throw error
        }
        try await parts.httpClient.shutdown()
    }
}

/// The gateway on a real socket of loopback (`client.port`), as `buildApplication` wires it, on a fresh
/// database, with locations-service's router over pins in memory behind its hop: for what a client's bytes
/// on the wire do (framing, spellings of a path) and what the service is then asked
/// (`locations.traffic`), the service up or stopped.
func withGatewaySocket(
    configure: @Sendable (inout GatewayConfiguration) -> Void = { _ in },
    _ body: @escaping @Sendable (any TestClientProtocol, MemoryLocations) async throws -> Void
) async throws {
    try await withBuiltGateway(
        .live, clock: SystemClock(), pinsPerStudent: defaultPinsPerStudent,
        configure: { configuration in
            configuration.host = "127.0.0.1"
            configuration.port = 0
            configure(&configuration)
        }, body)
}

/// The gateway as `buildApplication` wires it, on a fresh database, tested by `setup`.
private func withBuiltGateway(
    _ setup: TestingSetup,
    clock: any WallClock,
    pinsPerStudent: Int,
    configure: @Sendable (inout GatewayConfiguration) -> Void,
    _ body: @escaping @Sendable (any TestClientProtocol, MemoryLocations) async throws -> Void
) async throws {
    let database = try await TestDatabase.create()
    var configuration = try testGatewayConfiguration(database: database.url, locations: "http://127.0.0.1:9")
    configure(&configuration)
    try await withMemoryLocations(pinsPerStudent: pinsPerStudent, clock: clock) { locations in
        let app = try buildApplication(configuration, clock: clock, logger: TestDatabase.logger, hop: locations)
        try await app.test(setup) { client in try await body(client, locations) }
    }
}

/// The router, answering each request as if it came from `peer`: Hummingbird's router tests connect no
/// socket, so their requests have no client address, and limits kept per address would never apply.
struct FromPeer<Router: HTTPResponder>: HTTPResponder where Router.Context == GatewayRequestContext {
    let router: Router
    let peer: SocketAddress

    func respond(to request: Request, context: GatewayRequestContext) async throws -> Response {
        let channel = NIOAsyncTestingChannel()
        channel.remoteAddress = peer
        return try await router.respond(to: request, context: GatewayRequestContext(source: .init(channel: channel, logger: context.logger)))
    }
}

/// The gateway's settings in a test: its database and locations-service at the URLs given, the tests'
/// internal token, warnings only, and the cheapest password hashing it takes (cost 4).
func testGatewayConfiguration(database: String, locations: String) throws -> GatewayConfiguration {
    var configuration = try GatewayConfiguration.fromEnvironment([
        "DATABASE_URL": database, "LOCATIONS_URL": locations, "INTERNAL_TOKEN": TestDatabase.internalToken, "LOG_LEVEL": "warning",
    ])
    configuration.passwordCost = 4
    return configuration
}
#endif
