import OnTheMapClient
import OnTheMapShared
import ServiceKit
import Testing

@testable import ServiceTwins

/// What a program on the library meets: a gateway whose students sign up and log in.
protocol StudentSystem: Sendable {
    /// The gateway's base URL.
    var url: String { get }
    /// A client of this system's gateway, with `session` if given; over HTTP to `url` unless the system says.
    func client(_ session: Session?) -> OnTheMapClient
    /// Time passing between two steps, so that each has a moment of its own; nothing where the services tell
    /// the machine's time, which moves between two requests.
    func passTime()
}

extension StudentSystem {
    func client(_ session: Session?) -> OnTheMapClient { OnTheMapClient(gateway: url, session: session) }
    func client() -> OnTheMapClient { client(nil) }
    func passTime() {}

    /// A new student, signed up and logged in.
    func student(
        _ email: String, firstName: String = "Ada", lastName: String = "Lovelace", password: String = "correct horse battery"
    ) async throws -> OnTheMapClient {
        let client = client()
        try await client.signUp(email: email, password: password, firstName: firstName, lastName: lastName)
        return self.client(try await client.logIn(email: email, password: password))
    }
}

/// The gateway in memory: its router, with locations-service's over pins in memory behind its hop, and every
/// call of a client handed to it without a socket, a process or a database (`withGatewayRouter`). The
/// library's behaviour is tested here; `ClientSystem` keeps the real processes for what needs them.
struct MemorySystem: StudentSystem {
    /// The base URL the clients name; nothing listens there.
    let url: String
    let transport: RouterTransport
    /// The time both routers tell: it moves when a test says.
    let clock: ManualClock

    /// `url` tells two systems in one test apart.
    static func with(url: String = "http://gateway.test", _ body: @escaping @Sendable (MemorySystem) async throws -> Void) async throws {
        let clock = ManualClock()
        try await withGatewayRouter(clock: clock) { router, _ in
            try await body(MemorySystem(url: url, transport: RouterTransport(router: router), clock: clock))
        }
    }

    /// A second.
    func passTime() { clock.advance(by: .seconds(1)) }

    func client(_ session: Session?) -> OnTheMapClient {
        OnTheMapClient(gateway: url, session: session, transport: transport)
    }
}

/// The gateway in this process on a real socket of loopback and a fresh database, with locations-service's
/// router over pins in memory behind it (`withGatewaySocket`), which a test can stop: for what a client sees
/// while the service is away.
struct StoppableSystem: StudentSystem {
    let url: String
    let locations: MemoryLocations

    static func with(_ body: @escaping @Sendable (StoppableSystem) async throws -> Void) async throws {
        try await withGatewaySocket { gateway, locations in
            try await body(StoppableSystem(url: "http://127.0.0.1:\(try #require(gateway.port))", locations: locations))
        }
    }

    /// locations-service stops answering, as when its process has exited.
    func stopService() { locations.traffic.stop() }
}
