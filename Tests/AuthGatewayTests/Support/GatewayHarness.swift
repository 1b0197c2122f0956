import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import NIOEmbedded
import OnTheMapShared
import PostgresNIO
import Prometheus
import ServiceKit
import TestSupport

@testable import AuthGateway
@testable import ServiceTwins

/// A real locations-service process and the gateway in front of it on a real socket, on a fresh database.
struct GatewayFixture: Sendable {
    let database: TestDatabase
    let locations: ServiceProcess
}

func withGateway(
    database given: TestDatabase? = nil,
    clock: any WallClock = SystemClock(),
    configure: @Sendable (inout GatewayConfiguration) -> Void = { _ in },
    _ body: @escaping @Sendable (any TestClientProtocol, GatewayFixture) async throws -> Void
) async throws {
    let database: TestDatabase
    if let given { database = given } else { database = try await TestDatabase.create() }
    let locations = try ServiceProcess(locationsOn: database.url, logLevel: "debug")
    defer { locations.terminate() }
    try await locations.waitUntilReady()
    var configuration = try testGatewayConfiguration(database: database.url, locations: "http://127.0.0.1:\(locations.port)")
    configuration.host = "127.0.0.1"
    configuration.port = 0
    configure(&configuration)
    let app = try buildApplication(configuration, clock: clock, logger: TestDatabase.logger)
    try await app.testLive { client in
        try await body(client, GatewayFixture(database: database, locations: locations))
    }
}

/// A second gateway on the fixture's database and locations-service, on a real socket: another replica, as
/// behind a load balancer.
func withSecondReplica(of fixture: GatewayFixture, _ body: @escaping @Sendable (any TestClientProtocol) async throws -> Void) async throws {
    var configuration = try GatewayConfiguration.fromEnvironment([
        "DATABASE_URL": fixture.database.url, "LOCATIONS_URL": "http://127.0.0.1:\(fixture.locations.port)",
        "INTERNAL_TOKEN": TestDatabase.internalToken, "LOG_LEVEL": "warning",
    ])
    configuration.host = "127.0.0.1"
    configuration.port = 0
    try await buildApplication(configuration, logger: TestDatabase.logger).testLive(body)
}

/// The gateway's stores alone, as `GatewayStores` makes them: in memory, or on a fresh database with its
/// migrations run. Sessions expire by `clock`. A body whose every `try` is inside `#expect` says `async throws`
/// itself: a closure's effects are inferred from its body before the macro is expanded.
func withGatewayStores(
    _ kind: GatewayStoresKind, clock: any WallClock = SystemClock(), _ body: @escaping @Sendable (GatewayStores) async throws -> Void
) async throws {
    switch kind {
    case .memory:
        try await body(.inMemory(clock: clock))
    case .postgres:
        let database = try await TestDatabase.create()
        try await withPostgresClient(try database.databaseURL, logger: TestDatabase.logger) { client in
            try await Migrations.migrator(client, logger: TestDatabase.logger).migrate()
            try await body(.postgres(Database(client: client, logger: TestDatabase.logger), clock: clock))
        }
    }
}

/// A student as the tests drive one: an email, a password, and the session once logged in.
struct Student: Sendable {
    var email: String
    var password = "correct horse battery"
    var firstName = "Jarrod"
    var lastName = "Parkes"
    var key = ""
    var token = ""

    init(_ email: String, firstName: String = "Jarrod", lastName: String = "Parkes") {
        self.email = email
        self.firstName = firstName
        self.lastName = lastName
    }

    var bearer: HTTPField { HTTPField(name: .authorization, value: "Bearer \(token)") }
    var actor: Actor { Actor(key: key, firstName: firstName, lastName: lastName) }
}

extension TestClientProtocol {
    func send(_ method: HTTPRequest.Method, _ uri: String, body: String? = nil, headers: [HTTPField] = []) async throws -> Reply {
        try await reply(method, uri, headers: HTTPFields(headers), body: body)
    }

    func signUp(_ student: Student) async throws -> Student {
        var student = student
        let reply = try await send(
            .post, "/v1/accounts",
            body: """
                {"email":"\(student.email)","password":"\(student.password)","firstName":"\(student.firstName)","lastName":"\(student.lastName)"}
                """)
        guard reply.status == .created, let key = (reply.json["account"] as? [String: Any])?["key"] as? String else {
            throw HarnessError("sign-up failed: \(reply.status) \(reply.body)")
        }
        student.key = key
        return student
    }

    func logIn(_ student: Student) async throws -> Student {
        var student = student
        let reply = try await send(.post, "/v1/session", body: #"{"udacity":{"username":"\#(student.email)","password":"\#(student.password)"}}"#)
        guard reply.status == .ok, let id = (reply.json["session"] as? [String: Any])?["id"] as? String else {
            throw HarnessError("login failed: \(reply.status) \(reply.body)")
        }
        student.token = id
        return student
    }

    func signedUpAndLoggedIn(_ email: String, firstName: String = "Jarrod", lastName: String = "Parkes") async throws -> Student {
        try await logIn(try await signUp(Student(email, firstName: firstName, lastName: lastName)))
    }

    /// The pins of the map as the default list shows them, newest first.
    func pins() async throws -> [[String: Any]] {
        let reply = try await send(.get, "/v1/StudentLocation?limit=100&order=-updatedAt")
        guard reply.status == .ok, let results = reply.json["results"] as? [[String: Any]] else {
            throw HarnessError("list failed: \(reply.status) \(reply.body)")
        }
        return results
    }

    func postPin(as student: Student, mapString: String = "Mountain View, CA") async throws -> String {
        let reply = try await send(
            .post, "/v1/StudentLocation",
            body: """
                {"uniqueKey":"1234","firstName":"John","lastName":"Doe","mapString":"\(mapString)","mediaURL":"https://udacity.com","latitude":37.386052,"longitude":-122.083851}
                """, headers: [student.bearer])
        guard reply.status == .ok, let id = reply.json["objectId"] as? String else {
            throw HarnessError("post failed: \(reply.status) \(reply.body)")
        }
        return id
    }
}

/// How long the gateway's /metrics took to show the gauge `name` at `value`; nil if it did not within `limit`.
func waitForGauge(_ name: String, _ value: Double, _ client: any TestClientProtocol, within limit: Duration) async throws -> Duration? {
    try await waitFor(within: limit) { gauge(name, in: try await client.send(.get, "/metrics").body) == value }
}

/// Answers given so far by each door, as the gateway's /metrics counts them (`door` label).
func answeredByDoor(_ client: any TestClientProtocol) async throws -> [String: Int] {
    var counts: [String: Int] = [:]
    for (sample, value) in metricSamples(try await client.send(.get, "/metrics").body)
    where sample.hasPrefix("onthemap_http_requests_total{") {
        guard let label = sample.firstRange(of: #"door=""#) else { continue }
        counts[String(sample[label.upperBound...].prefix { $0 != "\"" }), default: 0] += Int(value)
    }
    return counts
}

/// `auth-gateway accounts ARGUMENTS…` on `database`, as an operator runs it beside the gateways.
func operatorAccounts(_ arguments: [String], on database: TestDatabase) async throws -> (status: Int32, output: String) {
    try await ServiceProcess.command("auth-gateway", ["accounts"] + arguments, environment: ["DATABASE_URL": database.url, "LOG_LEVEL": "warning"])
}
