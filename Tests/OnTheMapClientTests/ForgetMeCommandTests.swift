import Foundation
import OnTheMapClient
import OnTheMapShared
import TestSupport
import Testing

/// `forget-me`: it asks before it erases, and afterwards the student is gone from the present and the past.
@Suite(.serialized) struct ForgetMeCommandTests {
    @Test func forgetMeInAPipeWithoutYesRefusesAndErasesNothing() async throws {
        try await MemorySystem.with { system in
            let cli = MemoryCLI(system)
            let ada = try await cli.signUpAda(system)
            let pin = try await ada.postPin("Berlin, Germany")
            let refused = await cli.run(["forget-me"])
            #expect(refused.status == 64)
            #expect(refused.output.isEmpty)
            #expect(refused.errors == "no terminal to confirm erasing your account; pass --yes to erase it\n")
            #expect(await cli.run(["whoami"]).status == 0)
            #expect(try await system.client().list().map(\.objectId) == [pin])
        }
    }

    @Test func forgetMeWithYesErasesTheStudentFromThePresentAndThePast() async throws {
        try await MemorySystem.with { system in
            let cli = MemoryCLI(system)
            let past = try await KnownPast.make(system, ada: try await cli.signUpAda(system))
            let key = try #require(past.ada.session?.accountKey)
            let current = try await past.ada.postPin("Oslo, Norway")

            let erased = await cli.run(["forget-me", "--yes"])
            #expect(erased.status == 0, "\(erased)")
            #expect(erased.output == "erased account \(key) and 2 pins, with all their history; logged out of \(system.url)\n")

            let list = await cli.run(["list"])
            #expect(!list.output.contains("Ada Lovelace") && list.output.contains("Grace Hopper"), "\(list)")
            for moment in [past.whileInBerlin, past.whileInParis] {
                let then = await cli.run(["list", "--at", moment.iso8601])
                #expect(!then.output.contains("Ada Lovelace") && then.output.contains("Grace Hopper"), "\(then)")
            }
            for pin in [past.pin, current] {
                let history = await cli.run(["history", pin.rawValue])
                #expect(history.status == 9 && history.output.isEmpty, "\(history)")
            }
            #expect(await cli.run(["history", past.lima.rawValue]).output.contains("Grace Hopper · Lima, Peru"))
            let whoami = await cli.run(["whoami"])
            #expect(whoami.status == 5)
            #expect(whoami.errors == "not logged in to \(system.url); log in with: onthemap login\n")
            #expect(
                !FileManager.default.fileExists(
                    atPath: cli.configFolder.appendingPathComponent("session-http___gateway.test.json").path))
        }
    }

    @Test func atATerminalForgetMeErasesOnlyOnceTheEmailIsTyped() async throws {
        try await ClientSystem.with { system in
            let cli = CLI(gateway: system.url)
            let ada = try await cli.signUpAda(system)
            let pin = try await ada.postPin("Berlin, Germany")
            let prompt = "Type ada@example.com to erase it: "

            let declined = try await PseudoTerminal.run(["forget-me"], environment: cli.environment, dialogue: [(prompt, "yes\n")])
            #expect(declined.status == 10, "\(declined.output)")
            #expect(declined.output.contains("This erases the account of Ada Lovelace"), "\(declined.output)")
            #expect(declined.output.contains("nothing erased"), "\(declined.output)")
            #expect(try await system.client().list().map(\.objectId) == [pin])

            let confirmed = try await PseudoTerminal.run(["forget-me"], environment: cli.environment, dialogue: [(prompt, "Ada@Example.com\n")])
            #expect(confirmed.status == 0, "\(confirmed.output)")
            #expect(confirmed.output.contains("erased account \(ada.session!.accountKey) and 1 pin,"), "\(confirmed.output)")
            #expect(try await system.client().list().isEmpty)
        }
    }

    @Test func forgetMeSaysSoWhenTheGatewayFinishesErasingThePinsLater() async throws {
        try await StoppableSystem.with { system in
            let cli = MemoryCLI(gateway: system.url)
            let ada = try await cli.signUpAda(system)
            _ = try await ada.postPin("Berlin, Germany")
            system.stopService()

            let erased = await cli.run(["forget-me", "--yes"])
            #expect(erased.status == 0, "\(erased)")
            #expect(
                erased.output == "erased account \(ada.session!.accountKey) and its pins (the gateway finishes erasing them once "
                    + "the locations service answers); logged out of \(system.url)\n")
            #expect(await cli.run(["whoami"]).status == 5)
        }
    }
}
