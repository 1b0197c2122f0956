import Foundation
import OnTheMapShared
import PostgresNIO
import ServiceKit
import Synchronization
import TestSupport
import Testing

@testable import LocationsService

/// Replay rebuilds exactly the read model the live writes produced (operators' hides and unhides among
/// them), even while writes go on.
@Suite struct ReplayTests {
    static let moderator = LocationCommands.Context(actor: Actor(key: "operator:ops", firstName: "ops", lastName: ""))

    /// One random step of a student's life: post a pin, move it, or delete it; or of an operator's: hide a
    /// pin (it moves from `pins` to `hidden`), or bring a hidden one back.
    static func randomStep(
        _ commands: LocationCommands, pins: inout [ObjectID: Actor], hidden: inout [ObjectID: Actor], random: inout SeededRandom
    ) async throws {
        let roll = random.next() % 20
        if roll == 19, let picked = hidden.randomElement(using: &random) {
            _ = try await commands.unhide(picked.key, context: moderator)
            (hidden[picked.key], pins[picked.key]) = (nil, picked.value)
        } else if pins.isEmpty || roll < 6 {
            let owner = LocationCommandsHarness.owners[Int(random.next() % UInt64(LocationCommandsHarness.owners.count))]
            let answer = try await commands.post(
                LocationInput(
                    mapString: "Place \(random.next() % 1000)", mediaURL: "example.com/\(random.next() % 100)",
                    latitude: Double(Int(random.next() % 18000)) / 100 - 90, longitude: Double(Int(random.next() % 36000)) / 100 - 180),
                context: .init(actor: owner))
            pins[answer.objectId] = owner
        } else {
            let (objectId, owner) = pins.randomElement(using: &random)!
            if roll < 17 {
                _ = try await commands.update(
                    objectId,
                    with: LocationInput(
                        mapString: "Moved \(random.next() % 1000)", latitude: Double(Int(random.next() % 18000)) / 100 - 90),
                    ifMatch: nil, context: .init(actor: owner))
            } else if roll == 17 {
                try await commands.delete(objectId, ifMatch: nil, context: .init(actor: owner))
                pins[objectId] = nil
            } else {
                _ = try await commands.hide(objectId, reason: "spam", context: moderator)
                (pins[objectId], hidden[objectId]) = (nil, owner)
            }
        }
    }

    static func liveRows(_ client: PostgresClient) async throws -> [String] {
        let rows = try await client.query(
            """
            SELECT row_to_json(p)::text FROM locations.pins p ORDER BY object_id
            """, logger: TestDatabase.logger)
        return try await rows.collect().map { try $0.decode(String.self) }
    }

    static func quietProgress(_ total: Int) -> ProgressReporter { ProgressReporter(total: total, interactive: false, write: { _ in }) }

    @Test func replayOfFiveThousandRandomEventsEqualsTheLiveReadModel() async throws {
        let database = try await TestDatabase.create()
        try await database.withClient { client in
            try await LocationCommandsHarness.withCommands(client) { commands in
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for worker in 0..<8 {
                        group.addTask {
                            var random = SeededRandom(seed: 1000 + UInt64(worker))
                            var (pins, hidden): ([ObjectID: Actor], [ObjectID: Actor]) = ([:], [:])
                            for _ in 0..<630 { try await Self.randomStep(commands, pins: &pins, hidden: &hidden, random: &random) }
                        }
                    }
                    try await group.waitForAll()
                }
                #expect(try await LocationCommandsHarness.eventTotal(client) >= 5_000)
                let before = try await Self.liveRows(client)
                #expect(before.count > 500)

                let replayer = Replayer(client: client, logger: TestDatabase.logger)
                let verified = try await replayer.run(verify: true, progress: Self.quietProgress)
                #expect(verified.differenceCount == 0, "\(verified.differences.joined(separator: "\n"))")

                let summary = try await replayer.run(verify: false, progress: Self.quietProgress)
                #expect(summary.events >= 5_000)
                #expect(summary.pins == before.count)
                #expect(try await Self.liveRows(client) == before)
            }
        }
    }

    @Test func replayWhileWritesContinueLosesNone() async throws {
        let database = try await TestDatabase.create()
        try await database.withClient { client in
            try await LocationCommandsHarness.withCommands(client) { commands in
                let seeded = try await withThrowingTaskGroup(of: [ObjectID: Actor].self) { group in
                    for worker in 0..<4 {
                        group.addTask {
                            var random = SeededRandom(seed: 7 + UInt64(worker))
                            var (pins, hidden): ([ObjectID: Actor], [ObjectID: Actor]) = ([:], [:])
                            for _ in 0..<500 { try await Self.randomStep(commands, pins: &pins, hidden: &hidden, random: &random) }
                            return pins
                        }
                    }
                    return try await group.reduce(into: [:]) { $0.merge($1) { first, _ in first } }
                }

                let writing = StopFlag()
                let taken = SharedCount()
                let writers = (0..<4).map { worker in
                    Task { () -> (alive: Set<ObjectID>, steps: Int) in
                        var random = SeededRandom(seed: 99 + UInt64(worker))
                        var (pins, hidden): ([ObjectID: Actor], [ObjectID: Actor]) = ([:], [:])
                        var steps = 0
                        while !writing.isStopped || steps < 200 {
                            try await Self.randomStep(commands, pins: &pins, hidden: &hidden, random: &random)
                            steps += 1
                            taken.add()
                        }
                        return (Set(pins.keys), steps)
                    }
                }
                try await taken.grows(by: 100)
                let summary = try await Replayer(client: client, logger: TestDatabase.logger).run(verify: false, progress: Self.quietProgress)
                // Writes land after the swap too, on the new read model.
                try await taken.grows(by: 100)
                writing.stop()
                var alive = Set(seeded.keys)
                var steps = 0
                for writer in writers {
                    let result = try await writer.value
                    alive.formUnion(result.alive)
                    steps += result.steps
                }
                #expect(steps >= 800)
                #expect(summary.caughtUp > 0, "no write arrived during the replay, so the test proved nothing")

                let live = try await client.query("SELECT object_id FROM locations.pins", logger: TestDatabase.logger).collect()
                #expect(Set(try live.map { ObjectID(try $0.decode(String.self)) }) == alive)
                let verified = try await Replayer(client: client, logger: TestDatabase.logger).run(verify: true, progress: Self.quietProgress)
                #expect(verified.differenceCount == 0, "\(verified.differences.joined(separator: "\n"))")
            }
        }
    }

    @Test func verifyReportsEachDifferenceAndChangesNothing() async throws {
        let database = try await TestDatabase.create()
        try await database.withClient { client in
            try await LocationCommandsHarness.withCommands(client) { commands in
                let kept = try await commands.post(
                    LocationInput(mapString: "Berlin", mediaURL: "https://a.example", latitude: 52.5, longitude: 13.4),
                    context: .init(actor: LocationCommandsHarness.owners[0]))
                let tampered = try await commands.post(
                    LocationInput(mapString: "Lagos", mediaURL: "https://b.example", latitude: 6.4, longitude: 3.4),
                    context: .init(actor: LocationCommandsHarness.owners[1]))
                try await client.query(
                    """
                    UPDATE locations.pins SET map_string = 'Tampered' WHERE object_id = \(tampered.objectId.rawValue)
                    """, logger: TestDatabase.logger)
                let verified = try await Replayer(client: client, logger: TestDatabase.logger).run(verify: true, progress: Self.quietProgress)
                #expect(verified.differenceCount == 1)
                #expect(verified.differences.first?.contains(tampered.objectId.rawValue) == true)
                #expect(verified.differences.first?.contains("Tampered") == true)
                #expect(verified.differences.joined().contains(kept.objectId.rawValue) == false)
                let rows = try await Self.liveRows(client)
                #expect(rows.contains { $0.contains("Tampered") })

                _ = try await Replayer(client: client, logger: TestDatabase.logger).run(verify: false, progress: Self.quietProgress)
                #expect(!(try await Self.liveRows(client)).contains { $0.contains("Tampered") })
            }
        }
    }

    @Test func progressIsPlainLinesWithEventsPerSecondOffATerminal() {
        let lines = Mutex<[String]>([])
        let progress = ProgressReporter(total: 200, interactive: false, write: { text in lines.withLock { $0.append(text) } })
        progress.advance(to: 50, force: true)
        progress.finish(200)
        let output = lines.withLock { $0 }
        #expect(output.count == 2)
        #expect(output[0].hasPrefix("replay: 50/200 events (25%), "))
        #expect(output[1].hasPrefix("replay: 200/200 events (100%), "))
        #expect(output.allSatisfy { $0.hasSuffix(" events/s\n") })
    }

    @Test func progressIsABarRedrawnInPlaceOnATerminal() {
        let lines = Mutex<[String]>([])
        let progress = ProgressReporter(total: 100, interactive: true, write: { text in lines.withLock { $0.append(text) } })
        progress.finish(100)
        let output = lines.withLock { $0 }
        #expect(output.first?.hasPrefix("\r[##############################] 100% 100/100 events, ") == true)
        #expect(output.last == "\n")
    }
}
