import Foundation
import OnTheMapShared
import PostgresNIO
import ServiceKit
import TestSupport
import Testing

@testable import LocationsService

/// `?at=`: the map at a past moment, read from `locations.pin_versions`, equals what a fold of the log up to
/// that moment gives, for moments before, at, between and after the events of a random life of posts,
/// moves, deletions, hides and unhides; a pin hidden now is in no moment's map.
@Suite struct TimeTravelTests {
    /// The pins of the log folded up to `at`, as `query` would ask for them (filters on the owner only), but
    /// for the pins hidden now, which no moment shows.
    static func folded(_ events: [RecordedEvent], at: Timestamp, _ query: PinQuery) -> [StudentLocation] {
        var fold = PinFold()
        for event in events where event.moment <= at { fold.apply(event) }
        var last: [ObjectID: LocationEventType] = [:]
        for event in events { last[event.change.objectId] = event.type }
        let matching = fold.rows.values.map(\.location).filter { location in
            last[location.objectId] != .hidden && (query.filters[.uniqueKey].map { $0 == location.uniqueKey } ?? true)
        }
        let sorted = matching.sorted { a, b in
            switch query.order.first?.key {
            case .mapString where a.mapString != b.mapString: return a.mapString.unicodeScalars.lexicographicallyPrecedes(b.mapString.unicodeScalars)
            case .mapString: return a.objectId.rawValue < b.objectId.rawValue
            default: return a.updatedAt != b.updatedAt ? a.updatedAt > b.updatedAt : a.objectId.rawValue > b.objectId.rawValue
            }
        }
        return Array(sorted.dropFirst(query.skip).prefix(query.limit))
    }

    @Test func theMapAtAnyMomentEqualsTheFoldOfTheLogUpToIt() async throws {
        let database = try await TestDatabase.create()
        try await database.withClient { client in
            try await LocationCommandsHarness.withCommands(client) { commands in
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for worker in 0..<4 {
                        group.addTask {
                            var random = SeededRandom(seed: 2000 + UInt64(worker))
                            var (pins, hidden): ([ObjectID: Actor], [ObjectID: Actor]) = ([:], [:])
                            for _ in 0..<300 {
                                try await ReplayTests.randomStep(commands, pins: &pins, hidden: &hidden, random: &random)
                            }
                        }
                    }
                    try await group.waitForAll()
                }
            }
            let store = Database(client: client, logger: TestDatabase.logger, timeout: .seconds(30))
            let events = try await LocationCommandsHarness.allEvents(client)
            #expect(events.count >= 1_200)
            #expect(Set(events.map(\.type)) == Set(LocationEventType.allCases), "every kind of event")
            let lastOfEachPin = Dictionary(events.map { ($0.change.objectId, $0.type) }, uniquingKeysWith: { $1 })
            #expect(lastOfEachPin.values.contains(.hidden), "some pins are hidden at the end, and some moments showed them")
            let readModel = ReadModel(database: store)

            // Before the first event, each event's moment and the millisecond before it, and after the last.
            let moments = events.map(\.moment).sorted()
            var instants = [moments[0].advanced(by: -1), moments.last!.advanced(by: 1)]
            var random = SeededRandom(seed: 7)
            for _ in 0..<60 {
                let moment = moments[Int(random.next() % UInt64(moments.count))]
                instants += [moment, moment.advanced(by: -1)]
            }
            let owner = LocationCommandsHarness.owners[3].key
            var seen = 0
            for at in instants {
                let queries = [
                    PinQuery(at: at), PinQuery(limit: 1000, at: at), PinQuery(filters: [.uniqueKey: owner], at: at),
                    PinQuery(order: [.init(key: .mapString, descending: false)], limit: 20, skip: 5, at: at),
                ]
                for query in queries {
                    let answered = try await readModel.pins(query)
                    let expected = Self.folded(events, at: at, query)
                    if answered != expected {
                        let (got, want) = (answered.map(\.objectId.rawValue), expected.map(\.objectId.rawValue))
                        let differing = zip(answered, expected).first { $0 != $1 }
                        let odd = Set(got).symmetricDifference(want)
                        let streams = events.filter { odd.contains($0.change.objectId.rawValue) }.map {
                            "\($0.change.objectId) v\($0.streamVersion) \($0.type) moment \($0.moment) recorded \($0.recordedAt)"
                        }
                        Issue.record(
                            """
                            at \(at), \(query.filters) \(query.order.first!) limit \(query.limit) skip \(query.skip): \(got.count) pins, \
                            not \(want.count); only answered \(Set(got).subtracting(want)), only folded \(Set(want).subtracting(got)), \
                            first differing \(String(describing: differing)); \(streams)
                            """)
                    }
                    seen += answered.count
                }
            }
            #expect(try await readModel.pins(PinQuery(at: moments[0].advanced(by: -1))).isEmpty)
            #expect(try await readModel.pins(PinQuery(limit: 1000, at: .now())) == (try await readModel.pins(PinQuery(limit: 1000))))
            #expect(seen > 10_000, "the moments asked about show pins")
        }
    }
}

extension Timestamp {
    func advanced(by milliseconds: Int64) -> Timestamp { Timestamp(millisecondsSince1970: millisecondsSince1970 + milliseconds) }
}
