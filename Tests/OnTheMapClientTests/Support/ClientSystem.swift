import Foundation
import OnTheMapClient
import OnTheMapShared
import TestSupport
import Testing

/// The whole system as a student meets it: locations-service and the gateway as real processes on a
/// fresh database. A second gateway on the same database and service stands in for another machine.
final class ClientSystem: StudentSystem, @unchecked Sendable {
    let database: TestDatabase
    let locations: ServiceProcess
    private(set) var gateway: ServiceProcess
    /// What every gateway of this system has in its environment besides the database and the service.
    let gatewayEnvironment: [String: String]

    private init(database: TestDatabase, locations: ServiceProcess, gateway: ServiceProcess, gatewayEnvironment: [String: String]) {
        self.database = database
        self.locations = locations
        self.gateway = gateway
        self.gatewayEnvironment = gatewayEnvironment
    }

    /// `gatewayPort` is for a gateway whose configuration names its own address (`PUBLIC_URL`).
    static func start(gatewayPort: Int? = nil, gatewayEnvironment: [String: String] = [:]) async throws -> ClientSystem {
        let database = try await TestDatabase.create()
        let locations = try ServiceProcess(locationsOn: database.url)
        try await locations.waitUntilReady()
        let gateway = try startGateway(database: database, locationsPort: locations.port, port: gatewayPort, environment: gatewayEnvironment)
        try await gateway.waitUntilReady()
        return ClientSystem(database: database, locations: locations, gateway: gateway, gatewayEnvironment: gatewayEnvironment)
    }

    static func startGateway(
        database: TestDatabase, locationsPort: Int, port: Int? = nil, environment: [String: String] = [:]
    ) throws -> ServiceProcess {
        try ServiceProcess(
            "auth-gateway",
            environment: environment.merging([
                "DATABASE_URL": database.url, "LOCATIONS_URL": "http://127.0.0.1:\(locationsPort)",
            ]) { $1 }, port: port)
    }

    /// Runs `body` with a started system and stops it afterwards, whatever happens.
    static func with(_ body: (ClientSystem) async throws -> Void) async throws {
        let system = try await start()
        defer { system.stop() }
        try await body(system)
    }

    var url: String { "http://127.0.0.1:\(gateway.port)" }

    /// Another gateway replica in front of the same service and database.
    func secondGateway() async throws -> ServiceProcess {
        let other = try Self.startGateway(database: database, locationsPort: locations.port, environment: gatewayEnvironment)
        try await other.waitUntilReady()
        return other
    }

    /// Stops the gateway (SIGTERM, as an orchestrator would) and returns once it has exited.
    func stopGateway() async {
        gateway.terminate()
        _ = await gateway.waitForExit(timeout: .seconds(10))
    }

    /// A new gateway process on the same port.
    func startGatewayAgain() async throws {
        gateway = try Self.startGateway(database: database, locationsPort: locations.port, port: gateway.port, environment: gatewayEnvironment)
        try await gateway.waitUntilReady()
    }

    func stop() {
        gateway.terminate()
        locations.terminate()
    }
}

/// Something that runs `onthemap` command lines: the real binary (`CLI`) or the commands in this process
/// (`MemoryCLI`).
protocol CommandRunner: Sendable {
    /// One command line to its end, `input` on stdin.
    func runCommand(_ arguments: [String], input: String) async throws -> CLI.Result
}

extension CLI: CommandRunner {
    func runCommand(_ arguments: [String], input: String) async throws -> CLI.Result { try await run(arguments, input: input) }
}

extension MemoryCLI: CommandRunner {
    func runCommand(_ arguments: [String], input: String) async throws -> CLI.Result { await run(arguments, input: input) }
}

extension CommandRunner {
    /// Ada Lovelace signed up through the CLI, so its session file is the one later commands use.
    func signUpAda(password: String = "correct horse battery") async throws {
        try await signUp("ada@example.com", "Ada", "Lovelace", password: password)
    }

    /// The same, and a client of Ada's with a session of its own, for what the test does beside the CLI.
    func signUpAda(_ system: some StudentSystem, password: String = "correct horse battery") async throws -> OnTheMapClient {
        try await signUp("ada@example.com", "Ada", "Lovelace", password: password, system: system)
    }

    /// A new account signed up through the CLI, so its session file is the one later commands use.
    func signUp(_ email: String, _ firstName: String, _ lastName: String, password: String = "correct horse battery") async throws {
        let signUp = try await runCommand(
            ["signup", "--email", email, "--first-name", firstName, "--last-name", lastName, "--password-stdin"], input: password + "\n")
        try #require(signUp.status == 0, "\(signUp)")
    }

    /// The same, and a client of that account with a session of its own, for what the test does beside the CLI.
    func signUp(
        _ email: String, _ firstName: String, _ lastName: String, password: String = "correct horse battery", system: some StudentSystem
    ) async throws -> OnTheMapClient {
        try await signUp(email, firstName, lastName, password: password)
        return system.client(try await system.client().logIn(email: email, password: password))
    }
}

extension OnTheMapClient {
    func postPin(_ place: String, latitude: Double = 52.52, longitude: Double = 13.40, link: String = "https://example.com") async throws -> ObjectID
    {
        try await post(LocationInput(mapString: place, mediaURL: link, latitude: latitude, longitude: longitude)).objectId
    }
}

/// A loopback port nobody listens on.
func deadGatewayURL() -> String { "http://127.0.0.1:\(freePort())" }

/// The typed error a call throws; nil when it succeeds (or throws anything else, which is recorded).
func thrownError<T>(_ call: () async throws -> T) async -> OnTheMapError? {
    do {
        _ = try await call()
        return nil
    } catch let error as OnTheMapError {
        return error
    } catch {
        Issue.record("not an OnTheMapError: \(error)")
        return nil
    }
}
