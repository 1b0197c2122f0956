import Foundation
import HTTPTypes
import OnTheMapShared
import Testing

@testable import AuthGateway
@testable import LocationsService
@testable import ServiceTwins

/// The public reads through the gateway's router, on every path family the apps use, with
/// locations-service's router over pins in memory behind the hop: what a client sees of the list and of
/// one pin, and what the gateway refuses or drops before asking the service.
@Suite struct GatewayReadTests {
    static let mounts = LocationsProxyController.mounts.map(\.0)

    /// Two of Amara's pins, in Lagos and Abuja; the first's id.
    static func seed(_ locations: MemoryLocations) async throws -> String {
        let amara = Actor(key: "5550001111", firstName: "Amara", lastName: "Nwosu")
        var first = ""
        for (index, place) in ["Lagos", "Abuja"].enumerated() {
            let now = Timestamp.now()
            let pin = StudentLocation(
                objectId: .random(), uniqueKey: amara.key, firstName: amara.firstName, lastName: amara.lastName, mapString: place,
                mediaURL: "https://example.com/\(index)", latitude: 6.5 + Double(index), longitude: 3.4, createdAt: now, updatedAt: now)
            _ = try await locations.log.appendPosted(pin, metadata: EventMetadata(actor: amara))
            if index == 0 { first = pin.objectId.rawValue }
        }
        return first
    }

    enum Read: String, CaseIterable {
        case list, ordered, onePin, unknownPin, malformedPin, overlongWhere, servicesOwnParameters
    }

    @Test(arguments: mounts, Read.allCases)
    func aPublicReadAnswersAsTheContractSays(_ mount: String, _ read: Read) async throws {
        try await withGatewayRouter { client, locations in
            let id = try await Self.seed(locations)
            switch read {
            case .list:
                let reply = try await client.send(.get, mount)
                #expect(reply.status == .ok && reply.headers[.contentType] == "application/json")
                let results = try #require(reply.json["results"] as? [[String: Any]])
                #expect(Set(results.compactMap { $0["mapString"] as? String }) == ["Lagos", "Abuja"])
                #expect(results.allSatisfy { $0.count == 10 && $0["firstName"] as? String == "Amara" })
                #expect(reply.headers[.eTag]?.hasPrefix("\"") == true)
            case .ordered:
                let reply = try await client.send(.get, mount + "?order=mapString&limit=1")
                #expect((reply.json["results"] as? [[String: Any]])?.map { $0["mapString"] as? String } == ["Abuja"])
            case .onePin:
                let reply = try await client.send(.get, mount + "/" + id)
                #expect(reply.status == .ok && reply.json["objectId"] as? String == id && reply.json["mapString"] as? String == "Lagos")
                #expect(reply.headers[.eTag] == "\"1\"")
            case .unknownPin:
                let reply = try await client.send(.get, mount + "/AAAAAAAAAA")
                #expect(reply.status == .notFound && reply.json["code"] as? Int == 101, "\(reply.body)")
            case .malformedPin:
                let reply = try await client.send(.get, mount + "/not..an..id")
                #expect(reply.status == .notFound && reply.json["code"] as? Int == 101, "\(reply.body)")
            case .overlongWhere:
                let reply = try await client.send(.get, mount + "?where=" + String(repeating: "x", count: 5000))
                #expect(reply.status == .badRequest && reply.json["code"] as? Int == 102, "\(reply.body)")
            case .servicesOwnParameters:
                // The service's follower parameters are not the public API's: dropped, as Parse ignored what it did not know.
                let reply = try await client.send(.get, mount + "?after=0-0&wait=5&events=false&order=-mapString")
                #expect((reply.json["results"] as? [[String: Any]])?.map { $0["mapString"] as? String } == ["Lagos", "Abuja"])
            }
        }
    }
}
