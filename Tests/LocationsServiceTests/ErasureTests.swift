import Foundation
import OnTheMapShared
import PostgresNIO
import ServiceKit
import TestSupport
import Testing

@testable import LocationsService

/// Erasure: a student's pins gone from the log, the map, every past map, history and a replay, and from the
/// tables' files once they are compacted, while every other stream stays as it was, byte for byte.
@Suite struct ErasureTests {
    static let student = Actor(key: "erasable-7f3a91", firstName: "Zephyrine", lastName: "Quillfeather")
    /// Strings only the erased student wrote.
    static let theirs = ["erasable-7f3a91", "Zephyrine", "Quillfeather", "Xanadu Lighthouse", "zephyrine-links.example", "Moved Quietly"]

    @Test func anErasedStudentIsInNoReadAtAnyMomentNorInTheTablesFiles() async throws {
        let database = try await TestDatabase.create()
        try await database.withClient { client in
            let store = Database(client: client, logger: TestDatabase.logger, timeout: .seconds(30))
            let (events, readModel) = (EventStore(database: store), ReadModel(database: store))
            let (streams, erasedPins): ([ObjectID], Set<ObjectID>) = try await LocationCommandsHarness.withCommands(client) { commands in
                var erasedPins: Set<ObjectID> = []
                var random = SeededRandom(seed: 31)
                var (pins, hidden): ([ObjectID: Actor], [ObjectID: Actor]) = ([:], [:])
                let context = LocationCommands.Context(actor: Self.student)
                for round in 0..<4 {
                    for _ in 0..<40 { try await ReplayTests.randomStep(commands, pins: &pins, hidden: &hidden, random: &random) }
                    let posted = try await commands.post(
                        LocationInput(
                            mapString: "Xanadu Lighthouse \(round)", mediaURL: "https://zephyrine-links.example/\(round)",
                            latitude: Double(round), longitude: 10),
                        context: context)
                    erasedPins.insert(posted.objectId)
                    _ = try await commands.update(
                        posted.objectId, with: LocationInput(mapString: "Moved Quietly", latitude: 20 + Double(round)), ifMatch: nil,
                        context: context)
                    if round == 1 { try await commands.delete(posted.objectId, ifMatch: nil, context: context) }
                    if round == 2 { _ = try await commands.hide(posted.objectId, reason: "spam", context: ReplayTests.moderator) }
                }
                let all = try await LocationCommandsHarness.allEvents(client)
                return (Array(Set(all.map(\.change.objectId))), erasedPins)
            }
            let before = try await LocationCommandsHarness.allEvents(client)
            let moments = before.map(\.moment)
            var histories: [ObjectID: String] = [:]
            for objectId in streams where !erasedPins.contains(objectId) {
                histories[objectId] = PinHistory(objectId: objectId, events: try await events.stream(objectId)).map { String(buffer: $0.json) }
            }
            #expect(try await readModel.pins(PinQuery(limit: 1000)).contains { $0.uniqueKey == Self.student.key })
            try await Compaction.run(tables: Migrations.erasedTables, on: client, logger: TestDatabase.logger)
            #expect(try await TestDatabase.filesHolding(Self.theirs, client) == Set(Self.theirs), "the scan finds what is there")

            let erased = try await LocationCommandsHarness.withCommands(client) { commands in
                try await commands.erase(context: .init(actor: Self.student))
            }
            #expect(erased == 4)

            let after = try await LocationCommandsHarness.allEvents(client)
            #expect(after.count == before.count - before.filter { erasedPins.contains($0.change.objectId) }.count + 4)
            let rows = try await client.query("SELECT row_to_json(e)::text FROM locations.events e", logger: TestDatabase.logger)
            for text in try await rows.collect().map({ try $0.decode(String.self) }) {
                #expect(!Self.theirs.contains { text.contains($0) }, "\(text)")
            }
            for at in [moments.min()!.advanced(by: -1), moments.max()!, Timestamp.now()] + moments.shuffled().prefix(60) {
                let query = PinQuery(limit: 1000, at: at)
                let map = try await readModel.pins(query)
                #expect(!map.contains { $0.uniqueKey == Self.student.key || erasedPins.contains($0.objectId) })
                #expect(map == TimeTravelTests.folded(after, at: at, query), "at \(at)")
            }
            #expect(!(try await readModel.pins(PinQuery(limit: 1000))).contains { $0.uniqueKey == Self.student.key })
            for objectId in erasedPins {
                #expect(PinHistory(objectId: objectId, events: try await events.stream(objectId)) == nil, "no history of \(objectId)")
            }
            for (objectId, history) in histories {
                let now = PinHistory(objectId: objectId, events: try await events.stream(objectId)).map { String(buffer: $0.json) }
                #expect(now == history, "another student's history of \(objectId) is unchanged")
            }

            let live = try await ReplayTests.liveRows(client)
            let replayer = Replayer(client: client, logger: TestDatabase.logger)
            let verified = try await replayer.run(verify: true, progress: ReplayTests.quietProgress)
            #expect(verified.differenceCount == 0, "\(verified.differences.joined(separator: "\n"))")
            _ = try await replayer.run(verify: false, progress: ReplayTests.quietProgress)
            #expect(try await ReplayTests.liveRows(client) == live)

            let again = try await LocationCommandsHarness.withCommands(client) { commands in
                try await commands.erase(context: .init(actor: Self.student))
            }
            #expect(again == 0)
            #expect(try await LocationCommandsHarness.allEvents(client) == after, "erasing again changes nothing")

            try await Compaction.run(tables: Migrations.erasedTables, on: client, logger: TestDatabase.logger)
            let left = try await TestDatabase.relationsHolding(Self.theirs, client)
            #expect(left.isEmpty, "\(left)")
        }
    }

    @Test func theLogRefusesEveryOtherDeletionUpdateAndTruncate() async throws {
        let database = try await TestDatabase.create()
        try await database.withClient { client in
            _ = try await LocationCommandsHarness.withCommands(client) { commands in
                try await commands.post(
                    LocationInput(mapString: "Lima", mediaURL: "https://a.example", latitude: -12, longitude: -77),
                    context: .init(actor: LocationCommandsHarness.owners[0]))
            }
            for statement in ["DELETE FROM locations.events", "UPDATE locations.events SET actor_key = ''", "TRUNCATE locations.events"] {
                await #expect(throws: PSQLError.self, "\(statement)") {
                    try await client.query(PostgresQuery(unsafeSQL: statement), logger: TestDatabase.logger)
                }
            }
            #expect(try await LocationCommandsHarness.eventTotal(client) == 1)
        }
    }
}
