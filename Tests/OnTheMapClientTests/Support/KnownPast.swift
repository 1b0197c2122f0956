import OnTheMapClient
import OnTheMapShared
import Testing

/// A past to ask about: Grace's pin in Lima stays throughout; then Ada posts a pin in Berlin, moves it to
/// Paris and deletes it. The moments are those of the pin's history as the gateway tells it.
struct KnownPast {
    let grace: OnTheMapClient
    let ada: OnTheMapClient
    let lima: ObjectID
    /// Ada's pin, deleted by now.
    let pin: ObjectID
    let posted: Timestamp
    let moved: Timestamp
    let deleted: Timestamp

    static let berlin = LocationInput(mapString: "Berlin, Germany", mediaURL: "https://ada.example", latitude: 52.52, longitude: 13.4)
    static let paris = LocationInput(mapString: "Paris, France", latitude: 48.8566, longitude: 2.3522)

    static func make(_ system: some StudentSystem) async throws -> KnownPast {
        try await make(system, ada: system.student("ada@example.com"))
    }

    /// With `ada` as Ada's client: a session of an account the command line is logged in to, say.
    static func make(_ system: some StudentSystem, ada: OnTheMapClient) async throws -> KnownPast {
        let grace = try await system.student("grace@example.com", firstName: "Grace", lastName: "Hopper")
        let lima = try await grace.postPin("Lima, Peru", latitude: -12.05, longitude: -77.04, link: "https://grace.example")
        system.passTime()
        let pin = try await ada.post(berlin).objectId
        system.passTime()
        _ = try await ada.update(pin, paris)
        system.passTime()
        try await ada.delete(pin)
        system.passTime()
        let history = try await system.client().history(pin)
        try #require(history.results.map(\.event) == [.posted, .moved, .deleted], "\(history)")
        let (posted, moved, deleted) = (history.results[0].at, history.results[1].at, history.results[2].at)
        try #require(posted < moved && moved < deleted, "each event has a moment of its own: \(history)")
        return KnownPast(grace: grace, ada: ada, lima: lima, pin: pin, posted: posted, moved: moved, deleted: deleted)
    }

    /// A moment after the post and before the move: Ada's pin in Berlin.
    var whileInBerlin: Timestamp { Self.between(posted, moved) }
    /// A moment after the move and before the deletion: Ada's pin in Paris.
    var whileInParis: Timestamp { Self.between(moved, deleted) }
    /// The last moment before Ada's pin: Grace's alone.
    var beforeAda: Timestamp { Timestamp(millisecondsSince1970: posted.millisecondsSince1970 - 1) }

    private static func between(_ earlier: Timestamp, _ later: Timestamp) -> Timestamp {
        Timestamp(millisecondsSince1970: (earlier.millisecondsSince1970 + later.millisecondsSince1970) / 2)
    }
}
