import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import OnTheMapShared
import PostgresNIO
import Prometheus
import ServiceKit
import TestSupport

@testable import LocationsService
@testable import ServiceTwins

/// Runs the real application on a real socket against a fresh database.
func withLiveService(
    configure: (inout ServiceConfiguration) -> Void = { _ in },
    _ body: @escaping @Sendable (any TestClientProtocol, TestDatabase) async throws -> Void
) async throws {
    let database = try await TestDatabase.create()
    var configuration = try database.configuration()
    configure(&configuration)
    let app = buildApplication(configuration, logger: TestDatabase.logger)
    try await app.testLive { client in
        try await body(client, database)
    }
}

/// The service's router alone, without a server or PostgreSQL: its pins in a `MemoryLocationLog`, for what
/// is decided above the store (the contract's shapes, validation, ownership, versions, error shapes).
/// A request that reaches the database (the health routes) is answered as an outage, 503, after the
/// request path's deadline.
func withRouter(
    clock: any WallClock = SystemClock(), pinsPerStudent: Int = PinCap.defaultPinsPerStudent,
    _ body: @escaping @Sendable (any TestClientProtocol, MemoryLocationLog) async throws -> Void
) async throws {
    let registry = PrometheusCollectorRegistry()
    let log = MemoryLocationLog(pinsPerStudent: pinsPerStudent)
    let parts = ServiceParts.inMemory(log, registry: registry, logger: TestDatabase.logger, clock: clock)
    let routes = buildRouter(
        parts, token: InternalToken(TestDatabase.internalToken), counters: RequestCounters(registry: registry), registry: registry)
    try await withThrowingTaskGroup(of: Void.self) { group in
        // The cache builds the latest list in a service of its own.
        group.addTask { await parts.cache.run() }
        defer { group.cancelAll() }
        try await Application(router: routes.router).test(.router) { client in try await body(client, log) }
    }
}

extension TestClientProtocol {
    func send(
        _ method: HTTPRequest.Method, _ uri: String, as actor: Actor? = nil, body: String? = nil,
        headers extra: [HTTPField] = [], token: Bool = true
    ) async throws -> Reply {
        var headers = TestActors.headers(as: actor, extra)
        if !token { headers[.authorization] = nil }
        return try await reply(method, uri, headers: headers, body: body)
    }

    /// Posts a pin as `actor` and returns its objectId.
    func post(
        as actor: Actor, mapString: String = "Mountain View, CA", mediaURL: String = "https://udacity.com",
        latitude: Double = 37.386052, longitude: Double = -122.083851
    ) async throws -> String {
        try await posted(as: actor, mapString: mapString, mediaURL: mediaURL, latitude: latitude, longitude: longitude).objectId
    }

    /// Posts a pin as `actor` and returns what the POST answered: its objectId and createdAt.
    func posted(
        as actor: Actor, mapString: String = "Mountain View, CA", mediaURL: String = "https://udacity.com",
        latitude: Double = 37.386052, longitude: Double = -122.083851
    ) async throws -> (objectId: String, createdAt: String) {
        let reply = try await send(
            .post, "/v1/StudentLocation", as: actor,
            body: """
                {"mapString":"\(mapString)","mediaURL":"\(mediaURL)","latitude":\(latitude),"longitude":\(longitude)}
                """)
        guard reply.status == .ok, let id = reply.json["objectId"] as? String, let createdAt = reply.json["createdAt"] as? String else {
            throw HarnessError("POST failed: \(reply.status) \(reply.body)")
        }
        return (id, createdAt)
    }

    func list(_ query: String = "") async throws -> [[String: Any]] {
        let reply = try await send(.get, "/v1/StudentLocation" + query)
        return reply.json["results"] as? [[String: Any]] ?? []
    }
}
