import Foundation
import OnTheMapClient
import OnTheMapShared
import TestSupport
import Testing

/// The log's past from the command line, `list --at` and `history`, as a script in a pipe sees it (the
/// commands in this process, on the gateway in memory).
@Suite(.serialized) struct PastCommandLineTests {
    @Test func listAtAMomentShowsThePinsOfThatMoment() async throws {
        try await MemorySystem.with { system in
            let past = try await KnownPast.make(system)
            let cli = MemoryCLI(system)

            let berlin = await cli.run(["list", "--at", past.whileInBerlin.iso8601])
            #expect(berlin.status == 0, "\(berlin)")
            #expect(
                berlin.output == """
                    NAME          PLACE            LINK                   AGE
                    Ada Lovelace  Berlin, Germany  https://ada.example    just now
                    Grace Hopper  Lima, Peru       https://grace.example  just now

                    """, "\(berlin)")

            let paris = await cli.run(["list", "--at", past.whileInParis.iso8601, "--json"])
            #expect(paris.status == 0, "\(paris)")
            let pins = try JSONDecoder().decode(StudentLocationList.self, from: Data(paris.output.utf8)).results
            #expect(pins.map(\.mapString) == ["Paris, France", "Lima, Peru"])

            // The same moment two hours east of UTC: the `+` of the offset reaches the gateway as a `+`.
            let local = Timestamp(millisecondsSince1970: past.whileInParis.millisecondsSince1970 + 2 * 3_600_000)
            let offset = await cli.run(["list", "--at", String(local.iso8601.dropLast()) + "+02:00", "--json"])
            #expect(offset.status == 0 && offset.output == paris.output, "\(offset)")

            let before = await cli.run(["list", "--at", past.beforeAda.iso8601])
            #expect(before.output.split(separator: "\n").dropFirst().map { $0.hasPrefix("Grace Hopper") } == [true], "\(before)")
            let after = await cli.run(["list", "--at", past.deleted.iso8601])
            #expect(after.output.split(separator: "\n").dropFirst().map { $0.hasPrefix("Grace Hopper") } == [true], "\(after)")
            let empty = await cli.run(["list", "--at", "2001-01-01"])
            #expect(empty.status == 0 && empty.output.isEmpty && empty.errors == "no pins at 2001-01-01\n", "\(empty)")
        }
    }

    @Test func aTimeTheGatewayCannotReadIsOneClearLineAndAFailure() async throws {
        try await MemorySystem.with { system in
            let cli = MemoryCLI(system)
            let malformed = await cli.run(["list", "--at", "last tuesday"])
            #expect(malformed.status == 8)
            #expect(malformed.output.isEmpty)
            #expect(malformed.errors == "--at \"last tuesday\": at must be a time in ISO 8601, such as 2026-11-26T09:30:00Z.\n")
            let future = await cli.run(["list", "--at", "2999-01-01", "--json"])
            #expect(future.status == 8 && future.output.isEmpty, "\(future)")
            #expect(future.errors.hasPrefix("--at \"2999-01-01\": at must not be in the future"), "\(future)")
            #expect(future.errors.split(separator: "\n").count == 1, "\(future)")
        }
    }

    @Test func historyShowsAPinsEventsOldestFirstWithWhatChanged() async throws {
        try await MemorySystem.with { system in
            let past = try await KnownPast.make(system)
            let cli = MemoryCLI(system)
            let table = await cli.run(["history", past.pin.rawValue])
            #expect(table.status == 0, "\(table)")
            #expect(
                table.output.split(separator: "\n") == [
                    "TIME                      EVENT    DETAILS",
                    "\(past.posted)  posted   Ada Lovelace · Berlin, Germany · https://ada.example",
                    "\(past.moved)  moved    place Berlin, Germany → Paris, France · latitude 52.52 → 48.8566 · longitude 13.4 → 2.3522",
                    "\(past.deleted)  deleted",
                ], "\(table)")

            let json = await cli.run(["history", past.pin.rawValue, "--json"])
            #expect(json.status == 0, "\(json)")
            #expect(json.output == String(decoding: try await system.client().historyJSON(past.pin), as: UTF8.self) + "\n")

            let unknown = await cli.run(["history", "AAAAAAAAAA"])
            #expect(unknown.status == 9 && unknown.errors == "Object not found.\n", "\(unknown)")
        }
    }

    @Test func historyWithoutAnIdIsThatOfOnesOwnPin() async throws {
        try await MemorySystem.with { system in
            let cli = MemoryCLI(system)
            try await cli.signUpAda()
            let grace = try await system.student("grace@example.com", firstName: "Grace", lastName: "Hopper")
            _ = try await grace.postPin("Lima, Peru")
            let post = await cli.run(["post", "--location", "Berlin, Germany", "--link", "https://ada.example", "--yes"])
            let id = post.output.trimmingCharacters(in: .newlines)
            #expect(await cli.run(["post", "--location", "Paris, France", "--link", "https://ada.example", "--yes"]).status == 0)

            let mine = await cli.run(["history"])
            #expect(mine.status == 0, "\(mine)")
            let events = mine.output.split(separator: "\n").dropFirst().map { $0.split(separator: " ", omittingEmptySubsequences: true)[1] }
            #expect(events == ["posted", "moved"], "\(mine)")
            #expect(mine.output.contains("place Berlin, Germany → Paris, France"), "\(mine)")
            #expect(mine.output == (await cli.run(["history", id])).output)

            #expect(await cli.run(["delete", "--yes"]).status == 0)
            let none = await cli.run(["history"])
            #expect(none.status == 9)
            #expect(none.errors == "you have no pin on the map; name one: onthemap history OBJECT_ID\n")
        }
    }
}
