import Foundation
import HTTPTypes
import OnTheMapShared
import Testing

@testable import LocationsService
@testable import ServiceTwins

/// Every documented way of asking for the list, on the service's router over pins in memory: which
/// pins, in what order, which page, and a Parse-style 400 for what it cannot do. (The same queries in
/// SQL are in ContractTests, against PostgreSQL.)
@Suite struct ListQueryTests {
    /// Four pins: two of Jarrod's, one of Amara's, one of João's.
    static let pins: [(actor: Actor, place: String, latitude: Double)] = [
        (TestActors.jarrod, "Berlin", 52.52), (TestActors.amara, "Lagos", 6.52), (TestActors.joao, "Lisboa", 38.72),
        (TestActors.jarrod, "Huntsville", 34.73),
    ]

    static func encoded(_ json: String) -> String {
        json.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? json
    }

    static let answered: [(query: String, places: [String])] = [
        ("order=latitude", ["Lagos", "Huntsville", "Lisboa", "Berlin"]),
        ("order=-latitude", ["Berlin", "Lisboa", "Huntsville", "Lagos"]),
        ("order=mapString", ["Berlin", "Huntsville", "Lagos", "Lisboa"]),
        ("order=-mapString&limit=2", ["Lisboa", "Lagos"]),
        ("order=mapString&skip=3", ["Lisboa"]),
        ("order=mapString&skip=2&limit=1", ["Lagos"]),
        ("uniqueKey=3903878747&order=mapString", ["Berlin", "Huntsville"]),
        ("where=" + encoded(#"{"firstName":"João"}"#), ["Lisboa"]),
        ("where=" + encoded(#"{"uniqueKey":"3903878747"}"#) + "&order=-mapString", ["Huntsville", "Berlin"]),
        ("where=" + encoded(#"{"uniqueKey":"5550001111"}"#) + "&uniqueKey=3903878747", []),
        ("where=" + encoded(#"{"lastName":"Nwosu","firstName":"Amara"}"#), ["Lagos"]),
        ("where=" + encoded(#"{"mapString":"Lagos"}"#), ["Lagos"]),
        ("limit=0", []),
        ("skip=10", []),
        ("order=-updateAt,latitude", ["Lagos", "Huntsville", "Lisboa", "Berlin"]),
        ("where=&order=latitude", ["Lagos", "Huntsville", "Lisboa", "Berlin"]),
        ("order=lastName,mapString", ["Lisboa", "Lagos", "Berlin", "Huntsville"]),
        ("limit=5000&order=latitude", ["Lagos", "Huntsville", "Lisboa", "Berlin"]),
    ]

    @Test(arguments: answered.indices)
    func aDocumentedQueryAnswersThesePinsInThisOrder(_ index: Int) async throws {
        let (query, places) = Self.answered[index]
        try await withRouter { client, _ in
            for pin in Self.pins { _ = try await client.post(as: pin.actor, mapString: pin.place, latitude: pin.latitude) }
            let reply = try await client.send(.get, "/v1/StudentLocation?" + query)
            #expect(reply.status == .ok, "\(query)")
            let results = try #require(reply.json["results"] as? [[String: Any]], "\(query): \(reply.body)")
            #expect(results.map { $0["mapString"] as? String ?? "?" } == places, "\(query)")
        }
    }

    static let refused = [
        "limit=ten", "limit=-1", "limit=", "skip=x", "skip=-3", "where=notjson", "where=" + encoded(#"{"latitude":1}"#),
        "where=" + encoded(#"{"firstName":1}"#), "where=" + encoded(#"{"firstName":{"$ne":"x"}}"#),
        "where=" + encoded(#"{"firstName":"a\u0000b"}"#), "limit=" + String(repeating: "9", count: 40),
    ]

    @Test(arguments: refused)
    func aQueryItCannotDoIsAParseStyle400(_ query: String) async throws {
        try await withRouter { client, log in
            let reply = try await client.send(.get, "/v1/StudentLocation?" + query)
            #expect(reply.status == .badRequest, "\(query)")
            #expect(reply.json["code"] as? Int == 102, "\(query): \(reply.body)")
            #expect((reply.json["error"] as? String)?.isEmpty == false, "\(query)")
            #expect(log.eventCount == 0)
        }
    }
}
