import Foundation
import OnTheMapClient
import OnTheMapShared
import TestSupport
import Testing

/// `onthemap` as a student at a terminal or a script in a pipe uses it: the commands in this process on the
/// gateway in memory, and the real binary against the real system for what needs a terminal, a socket or
/// the live stream.
@Suite(.serialized) struct CommandLineTests {
    static let password = "correct horse battery"

    @Test func theWholeStudentFlow() async throws {
        try await MemorySystem.with { system in
            let cli = MemoryCLI(system)
            let signUp = await cli.run(
                [
                    "signup", "--email", "ada@example.com", "--first-name", "Ada", "--last-name", "Lovelace",
                    "--password-stdin",
                ], input: Self.password + "\n")
            #expect(signUp.status == 0, "\(signUp)")
            let login = await cli.run(["login", "ada@example.com", "--password-stdin"], input: Self.password + "\n")
            #expect(login.status == 0, "\(login)")
            #expect(login.output == "logged in as Ada Lovelace <ada@example.com> on \(system.url)\n")

            let whoami = await cli.run(["whoami"])
            #expect(whoami.status == 0)
            #expect(whoami.output.hasPrefix("Ada Lovelace <ada@example.com> · key "), "\(whoami)")

            let post = await cli.run(["post", "--location", "Patiala, Punjab", "--link", "example.com/ada", "--yes"])
            #expect(post.status == 0, "\(post)")
            let id = post.output.trimmingCharacters(in: .newlines)
            #expect(ObjectID(id).isWellFormed, "\(post)")

            let json = await cli.run(["list", "--json"])
            #expect(json.status == 0)
            let list = try JSONDecoder().decode(StudentLocationList.self, from: Data(json.output.utf8))
            let pin = try #require(list.results.first { $0.objectId.rawValue == id })
            #expect(abs(pin.latitude - 30.34) <= 0.3 && abs(pin.longitude - 76.39) <= 0.3, "\(pin)")
            #expect(pin.mediaURL == "https://example.com/ada" && pin.mapString == "Patiala, Punjab")

            let table = await cli.run(["list"])
            let lines = table.output.split(separator: "\n")
            #expect(lines.first?.hasPrefix("NAME          PLACE            LINK                     AGE") == true, "\(table.output)")
            #expect(lines.dropFirst().first == "Ada Lovelace  Patiala, Punjab  https://example.com/ada  just now")

            let overwrite = await cli.run(["post", "--location", "Berlin, Germany", "--link", "https://udacity.com", "--yes"])
            #expect(overwrite.status == 0, "\(overwrite)")
            #expect(overwrite.output.trimmingCharacters(in: .newlines) == id, "the pin was moved, not added")
            let mine = await cli.run(["list", "--mine", "--json"])
            let moved = try JSONDecoder().decode(StudentLocationList.self, from: Data(mine.output.utf8)).results
            #expect(moved.map(\.mapString) == ["Berlin, Germany"])

            let delete = await cli.run(["delete", "--yes"])
            #expect(delete.status == 0 && delete.output == "deleted \(id)\n", "\(delete)")
            let logout = await cli.run(["logout"])
            #expect(logout.status == 0, "\(logout)")
            #expect(
                !FileManager.default.fileExists(
                    atPath: cli.configFolder.appendingPathComponent("session-http___gateway.test.json").path))
            let after = await cli.run(["whoami"])
            #expect(after.status == 5)
            #expect(after.errors == "not logged in to \(system.url); log in with: onthemap login\n")
        }
    }

    @Test func aWrongPasswordAndAnUnreachableGatewayFailFastWithTheirOwnMessageAndCode() async throws {
        try await MemorySystem.with { system in
            let cli = MemoryCLI(system)
            _ = try await system.student("ada@example.com")
            let wrong = await cli.run(["login", "ada@example.com", "--password-stdin"], input: "not my password\n")
            #expect(wrong.status == 4)
            #expect(wrong.errors == "wrong email or password\n")
            #expect(wrong.output.isEmpty)
            #expect(wrong.elapsed < .seconds(2))
        }
        let dead = deadGatewayURL()
        let unreachable = await MemoryCLI(gateway: dead).run(["list"])
        #expect(unreachable.status == 3)
        #expect(unreachable.errors == "cannot reach \(dead): connection refused. Is the gateway up? (scripts/up.sh)\n")
        #expect(unreachable.elapsed < .seconds(2))
    }

    @Test func sessionsAreKeptPrivatelyOnePerGateway() async throws {
        try await MemorySystem.with(url: "http://127.0.0.1:8080") { system in
            try await MemorySystem.with(url: "http://maps.example.edu") { other in
                _ = try await system.student("ada@example.com")
                _ = try await other.student("grace@example.com", firstName: "Grace", lastName: "Hopper")
                let cli = MemoryCLI(system, other)
                #expect(await cli.run(["login", "ada@example.com", "--password-stdin"], input: Self.password + "\n").status == 0)
                #expect(
                    await cli.run(["login", "grace@example.com", "--password-stdin", "--gateway", other.url], input: Self.password + "\n").status
                        == 0)

                #expect(await cli.run(["whoami"]).output.hasPrefix("Ada Lovelace"))
                #expect(await cli.run(["whoami", "--gateway", other.url]).output.hasPrefix("Grace Hopper"))

                let folder = try FileManager.default.attributesOfItem(atPath: cli.configFolder.path)
                #expect((folder[.posixPermissions] as? Int) == 0o700)
                let files = try FileManager.default.contentsOfDirectory(atPath: cli.configFolder.path).sorted()
                #expect(files == ["session-http___127.0.0.1_8080.json", "session-http___maps.example.edu.json"])
                for file in files {
                    let path = cli.configFolder.appendingPathComponent(file).path
                    #expect((try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int) == 0o600)
                    #expect(!(try String(contentsOfFile: path, encoding: .utf8)).contains(Self.password))
                }
            }
        }
    }

    /// The list comes gzipped to the real binary (it is past the 256 bytes the gateway codes from) and reads
    /// the same as plain.
    @Test func theBinaryReadsTheListGzipped() async throws {
        try await ClientSystem.with { system in
            let cli = CLI(gateway: system.url)
            try await cli.signUpAda()
            #expect(try await cli.run(["post", "--location", "Patiala, Punjab", "--link", "example.com/ada", "--yes"]).status == 0)
            let json = try await cli.run(["list", "--json"])
            #expect(json.status == 0 && json.output.utf8.count > 256, "\(json)")
            let verbose = try await cli.run(["list", "--json", "--verbose"])
            #expect(verbose.status == 0 && verbose.output == json.output, "\(verbose)")
            #expect(verbose.errors.lowercased().contains("< content-encoding: gzip"), "\(verbose.errors)")
        }
    }

    @Test func aPipeGetsNoColourAndATerminalDoes() async throws {
        try await ClientSystem.with { system in
            let ada = try await system.student("ada@example.com")
            _ = try await ada.postPin("Berlin, Germany")
            let cli = CLI(gateway: system.url)
            let piped = try await cli.run(["list"])
            #expect(piped.status == 0 && piped.output.contains("Ada Lovelace"))
            #expect(!piped.output.contains("\u{1B}[") && !piped.errors.contains("\u{1B}["))

            let terminal = try await PseudoTerminal.run(["list"], environment: cli.environment, dialogue: [])
            #expect(terminal.status == 0 && terminal.output.contains("\u{1B}[1mNAME"), "\(terminal.output)")
            var plain = cli.environment
            plain["NO_COLOR"] = "1"
            let noColour = try await PseudoTerminal.run(["list"], environment: plain, dialogue: [])
            #expect(noColour.status == 0 && noColour.output.contains("Ada Lovelace") && !noColour.output.contains("\u{1B}["), "\(noColour.output)")
        }
    }

    @Test func onATerminalThePasswordPromptDoesNotEcho() async throws {
        try await ClientSystem.with { system in
            _ = try await system.student("ada@example.com")
            let cli = CLI(gateway: system.url)
            let result = try await PseudoTerminal.run(
                ["login", "ada@example.com"], environment: cli.environment,
                dialogue: [("Password: ", Self.password + "\n")])
            #expect(result.status == 0, "\(result.output)")
            #expect(result.output.contains("Password: "))
            #expect(result.output.contains("logged in as Ada Lovelace"))
            #expect(!result.output.contains(Self.password), "the password was echoed: \(result.output)")
        }
    }

    @Test func atATerminalSignupAsksForEverythingAndPostAsksWhichPlaceAndWhetherToMoveThePin() async throws {
        try await ClientSystem.with { system in
            let cli = CLI(gateway: system.url)
            let signUp = try await PseudoTerminal.run(
                ["signup"], environment: cli.environment,
                dialogue: [
                    ("First name: ", "Ada\n"), ("Last name: ", "Lovelace\n"), ("Email: ", "ada@example.com\n"),
                    ("Password (8+ characters): ", Self.password + "\n"), ("Password again: ", Self.password + "\n"),
                ])
            #expect(signUp.status == 0, "\(signUp.output)")
            #expect(signUp.output.contains("signed up and logged in as Ada Lovelace"))
            #expect(!signUp.output.contains(Self.password), "the password was echoed: \(signUp.output)")

            let first = try await PseudoTerminal.run(
                ["post", "--location", "Patiala, Punjab", "--link", "udacity.com"],
                environment: cli.environment, dialogue: [("Post here?", "\n")])
            #expect(first.status == 0, "\(first.output)")
            #expect(first.output.contains("Patiāla, Punjab, India (30.3362, 76.3922)"), "\(first.output)")
            let declined = try await PseudoTerminal.run(
                ["post", "--location", "Berlin, Germany", "--link", "udacity.com"],
                environment: cli.environment,
                dialogue: [("Post here?", "\n"), ("Overwrite it? [Y/n]", "n\n")])
            #expect(declined.status == 10, "\(declined.output)")
            let mine = try await cli.run(["list", "--mine", "--json"])
            #expect(try JSONDecoder().decode(StudentLocationList.self, from: Data(mine.output.utf8)).results.map(\.mapString) == ["Patiala, Punjab"])
        }
    }

    @Test func watchPrintsAnotherStudentsPinWithinASecondAndResumesAfterAGatewayRestart() async throws {
        try await ClientSystem.with { system in
            let grace = try await system.student("grace@example.com", firstName: "Grace", lastName: "Hopper")
            let watch = try CLI(gateway: system.url).start(["watch"])
            #expect(try await system.gateway.metric("onthemap_live_streams", reaches: 1), "watch never opened its stream")

            let first = try await grace.postPin("Berlin, Germany", link: "https://grace.example")
            let delay = try await watch.waitForLines(1, within: .seconds(1))
            #expect(delay < .seconds(1))
            #expect(watch.lines == ["+ Grace Hopper · Berlin, Germany · https://grace.example"])

            await system.stopGateway()
            let other = try await system.secondGateway()
            defer { other.terminate() }
            let elsewhere = OnTheMapClient(gateway: "http://127.0.0.1:\(other.port)", session: grace.session)
            _ = try await elsewhere.update(first, LocationInput(mapString: "Paris, France"))
            try await elsewhere.delete(first)
            try await system.startGatewayAgain()
            _ = try await grace.postPin("Lagos, Nigeria", link: "https://grace.example")

            // One more change closes the list: a change shown twice would come before it, as the log has them in order.
            _ = try await grace.postPin("Lima, Peru", link: "https://grace.example")
            _ = try await watch.waitForLines(5, within: .seconds(10))
            #expect(
                watch.lines == [
                    "+ Grace Hopper · Berlin, Germany · https://grace.example",
                    "~ Grace Hopper · Paris, France · https://grace.example",
                    "- pin \(first) of \(grace.session!.accountKey)",
                    "+ Grace Hopper · Lagos, Nigeria · https://grace.example",
                    "+ Grace Hopper · Lima, Peru · https://grace.example",
                ], "stderr: \(watch.errors)")
            #expect(await watch.interrupt() == 0)
        }
    }

    /// Away for longer than the gateway replays (`LIVE_RESUME_EVENTS`), `watch` is sent `reset`: it says so,
    /// prints the pins as they are now, and follows on.
    @Test func watchBackFromTooLongAwayPrintsThePinsAsTheyAreNow() async throws {
        let system = try await ClientSystem.start(gatewayEnvironment: ["LIVE_RESUME_EVENTS": "2"])
        defer { system.stop() }
        let grace = try await system.student("grace@example.com", firstName: "Grace", lastName: "Hopper")
        let watch = try CLI(gateway: system.url).start(["watch"])
        #expect(try await system.gateway.metric("onthemap_live_streams", reaches: 1), "watch never opened its stream")
        let first = try await grace.postPin("Berlin, Germany", link: "https://grace.example")
        _ = try await watch.waitForLines(1, within: .seconds(5))

        await system.stopGateway()
        let other = try await system.secondGateway()
        defer { other.terminate() }
        let elsewhere = OnTheMapClient(gateway: "http://127.0.0.1:\(other.port)", session: grace.session)
        for place in ["Paris, France", "Rome, Italy", "Oslo, Norway"] {
            _ = try await elsewhere.update(first, LocationInput(mapString: place))
        }
        try await system.startGatewayAgain()
        _ = try await watch.waitForLines(2, within: .seconds(10))
        _ = try await grace.postPin("Lima, Peru", link: "https://grace.example")
        _ = try await watch.waitForLines(3, within: .seconds(10))
        #expect(
            watch.lines == [
                "+ Grace Hopper · Berlin, Germany · https://grace.example",
                "= Grace Hopper · Oslo, Norway · https://grace.example",
                "+ Grace Hopper · Lima, Peru · https://grace.example",
            ], "stderr: \(watch.errors)")
        #expect(watch.errors.contains("missed more changes than the gateway replays; the pins as they are now:"))
        #expect(await watch.interrupt() == 0)
    }
}
