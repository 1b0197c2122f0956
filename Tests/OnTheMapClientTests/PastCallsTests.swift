import Foundation
import OnTheMapClient
import OnTheMapShared
import TestSupport
import Testing

/// The calls that read the log's past, against the gateway's router in memory: the list at a moment, a pin's history, the
/// GeoJSON feed.
@Suite(.serialized) struct PastCallsTests {
    @Test func theListAtAMomentHasThePinsOfThatMoment() async throws {
        try await MemorySystem.with { system in
            let past = try await KnownPast.make(system)
            let anonymous = system.client()
            func places(at moment: Timestamp) async throws -> [String] {
                try await anonymous.list(.init(at: Moment(moment))).map(\.mapString)
            }
            #expect(try await places(at: past.beforeAda) == ["Lima, Peru"])
            #expect(try await places(at: past.whileInBerlin) == ["Berlin, Germany", "Lima, Peru"])
            #expect(try await places(at: past.whileInParis) == ["Paris, France", "Lima, Peru"])
            #expect(try await places(at: past.deleted) == ["Lima, Peru"])
            let mine = try await anonymous.list(.init(uniqueKey: past.ada.session?.accountKey, at: Moment(past.whileInParis)))
            #expect(mine.map(\.objectId) == [past.pin], "the other parameters apply at the moment")
            let json = String(decoding: try await anonymous.listJSON(.init(limit: 1, at: Moment(past.whileInBerlin))), as: UTF8.self)
            #expect(json.hasPrefix(#"{"results":[{"objectId":"\#(past.pin)""#), "\(json)")
        }
    }

    @Test func aBadMomentIsRefusedWithTheGatewaysMessage() async throws {
        try await MemorySystem.with { system in
            let client = system.client()
            #expect(
                await thrownError { try await client.list(.init(at: Moment("last tuesday"))) }
                    == .refused(message: "at must be a time in ISO 8601, such as 2026-11-26T09:30:00Z.", parameter: nil))
            let future = await thrownError { try await client.geoJSON(.init(at: Moment("2999-01-01"))) }
            guard case .refused(let message, _) = future else {
                Issue.record("expected refused, got \(String(describing: future))")
                return
            }
            #expect(message.hasPrefix("at must not be in the future"), "\(message)")
        }
    }

    @Test func aPinsHistoryIsItsEventsOldestFirstWithWhatChanged() async throws {
        try await MemorySystem.with { system in
            let past = try await KnownPast.make(system)
            let history = try await system.client().history(past.pin)
            #expect(history.objectId == past.pin)
            #expect(history.results.map(\.event) == [.posted, .moved, .deleted])
            #expect(history.results.map(\.at) == [past.posted, past.moved, past.deleted])
            let posted = try #require(history.results[0].location)
            #expect(posted.mapString == "Berlin, Germany" && posted.mediaURL == "https://ada.example" && posted.firstName == "Ada")
            #expect(
                history.results[1].changes == [
                    "mapString": .init(from: .text("Berlin, Germany"), to: .text("Paris, France")),
                    "latitude": .init(from: .number(52.52), to: .number(48.8566)),
                    "longitude": .init(from: .number(13.4), to: .number(2.3522)),
                ])
            let json = try await system.client().historyJSON(past.pin)
            #expect(try JSONDecoder().decode(PinHistory.self, from: Data(json)) == history)
            #expect(await thrownError { try await system.client().history(ObjectID("AAAAAAAAAA")) } == .notFound(message: "Object not found."))
        }
    }

    @Test func theGeoJSONFeedHasThePinsAsPointsAtLongitudeLatitude() async throws {
        try await MemorySystem.with { system in
            let past = try await KnownPast.make(system)
            struct Feed: Decodable {
                struct Feature: Decodable {
                    struct Point: Decodable { var coordinates: [Double] }
                    var id: String
                    var geometry: Point
                    var properties: [String: String]
                }
                var type: String
                var features: [Feature]
            }
            let now = try JSONDecoder().decode(Feed.self, from: Data(try await system.client().geoJSON()))
            #expect(now.type == "FeatureCollection")
            #expect(now.features.map(\.id) == [past.lima.rawValue])
            #expect(now.features.first?.geometry.coordinates == [-77.04, -12.05])
            let then = try JSONDecoder().decode(Feed.self, from: Data(try await system.client().geoJSON(.init(at: Moment(past.whileInBerlin)))))
            #expect(then.features.map(\.id) == [past.pin.rawValue, past.lima.rawValue])
            #expect(then.features.first?.geometry.coordinates == [13.4, 52.52])
            #expect(then.features.first?.properties["place"] == "Berlin, Germany")
            #expect(then.features.first?.properties["name"] == "Ada Lovelace")
        }
    }
}
