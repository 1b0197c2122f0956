import Foundation
import OnTheMapClient
import OnTheMapShared
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// What a person at a terminal sees that a script never does: a table fitted to the window, a spinner
/// while the gateway is slow, a choice among places, and a browser opened on the web page.
@Suite(.serialized) struct TerminalCommandTests {
    static let password = "correct horse battery"

    /// The lines the terminal shows at the end: colour codes gone, and of a line rewritten after a carriage
    /// return (the spinner's), only what was written last.
    private func visible(_ output: String) -> [String] {
        let plain = output.replacingOccurrences(of: "\u{1B}\\[[0-9;]*[A-Za-z]", with: "", options: .regularExpression)
        return plain.replacingOccurrences(of: "\r\n", with: "\n").split(separator: "\n")
            .map { String($0.split(separator: "\r", omittingEmptySubsequences: false).last ?? "") }
    }

    @Test func onANarrowTerminalTheListFitsTheWindowAndCutsTheLongestColumns() async throws {
        try await ClientSystem.with { system in
            let cli = CLI(gateway: system.url)
            try await cli.signUpAda(password: Self.password)
            let link = "https://example.com/" + String(repeating: "a-long-path/", count: 8)
            let place = "Llanfairpwllgwyngyll, Isle of Anglesey, Wales"
            let post = try await cli.run(["post", "--location", "Berlin, Germany", "--link", link, "--yes"])
            #expect(post.status == 0, "\(post)")
            let id = ObjectID(post.output.trimmingCharacters(in: .newlines))
            let session = try await system.client().logIn(email: "ada@example.com", password: Self.password)
            _ = try await system.client(session).update(id, LocationInput(mapString: place))

            let narrow = try await PseudoTerminal.run(["list"], environment: cli.environment, dialogue: [], columns: 60)
            #expect(narrow.status == 0, "\(narrow.output)")
            let lines = visible(narrow.output)
            #expect(lines.count == 2, "\(lines)")
            for line in lines { #expect(line.count <= 60, "wider than the window: \(line)") }
            let row = try #require(lines.last)
            #expect(row.hasPrefix("Ada Lovelace  "), "\(row)")
            #expect(row.hasSuffix("just now"), "\(row)")
            #expect(row.contains("https://exam") && row.contains("Llanfair") && row.contains("…"), "place and link is cut with an ellipsis: \(row)")

            let piped = try await cli.run(["list"])
            #expect(piped.output.contains(link) && piped.output.contains(place), "a pipe gets every character: \(piped.output)")
        }
    }

    @Test func aSlowGatewayShowsASpinnerOnTheTerminalAndNothingInAPipe() async throws {
        try await ClientSystem.with { system in
            let cli = CLI(gateway: system.url)
            try await cli.signUpAda(password: Self.password)
            let gateway = system.gateway.process.processIdentifier

            // The gateway is held until the spinner shows (10 s at most), however long the CLI takes to start.
            kill(gateway, SIGSTOP)
            let shown = try await PseudoTerminal.run(
                ["whoami"], environment: cli.environment, dialogue: [],
                resuming: (gateway, "⠋ "))
            #expect(shown.status == 0, "\(shown.output)")
            #expect(shown.output.contains("⠋ "), "no spinner while the gateway was stopped: \(shown.output)")
            #expect(shown.output.contains("\r\u{1B}[K"), "the spinner's line was not wiped: \(shown.output)")
            #expect(visible(shown.output).last?.hasPrefix("Ada Lovelace <ada@example.com>") == true, "\(shown.output)")

            kill(gateway, SIGSTOP)
            let resumePipe = Task {
                // real time: the CLI shows its spinner after 300 ms by its own clock, in a process of its own.
                try await Task.sleep(for: .milliseconds(1_200))
                kill(gateway, SIGCONT)
            }
            let piped = try await cli.run(["whoami"])
            try await resumePipe.value
            #expect(piped.status == 0, "\(piped)")
            #expect(piped.errors.isEmpty, "a pipe got terminal output: \(piped.errors)")
        }
    }

    @Test func postLetsThePersonPickAnotherMatchThanTheBest() async throws {
        try await ClientSystem.with { system in
            let cli = CLI(gateway: system.url)
            try await cli.signUpAda(password: Self.password)
            let candidates = try await system.client().geocode("Springfield", limit: 5)
            try #require(candidates.count >= 3, "the gazetteer has several Springfields: \(candidates)")

            let chosen = try await PseudoTerminal.run(
                ["post", "--location", "Springfield", "--link", "udacity.com"],
                environment: cli.environment, dialogue: [("Post here?", "3\n")])
            #expect(chosen.status == 0, "\(chosen.output)")
            #expect(chosen.output.contains("3. \(candidates[2].name)"), "the other matches are listed: \(chosen.output)")
            #expect(chosen.output.contains("posted your pin at \(candidates[2].displayName)"), "\(chosen.output)")
            let mine = try await cli.run(["list", "--mine", "--json"])
            let pin = try #require(try JSONDecoder().decode(StudentLocationList.self, from: Data(mine.output.utf8)).results.first)
            #expect(pin.latitude == candidates[2].latitude && pin.longitude == candidates[2].longitude, "\(pin) is not \(candidates[2])")
            #expect(pin.mediaURL == "https://udacity.com")
        }
    }

    @Test func openStartsTheBrowserOnTheWebPageOrPrintsItsAddressWhenThereIsNone() async throws {
        let cli = CLI(gateway: deadGatewayURL())
        let opened = cli.home.appendingPathComponent("opened")
        let browser = cli.home.appendingPathComponent("browser")
        try "#!/bin/sh\nprintf '%s' \"$1\" > '\(opened.path)'\n".write(to: browser, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: browser.path)

        let withBrowser = try await cli.run(["open"], environmentAdding: ["BROWSER": browser.path])
        #expect(withBrowser.status == 0, "\(withBrowser)")
        #expect(withBrowser.output == "opened \(cli.gateway)/\n")
        #expect(try String(contentsOf: opened, encoding: .utf8) == "\(cli.gateway)/")

        let headless = try await cli.run(["open"])
        #expect(headless.status == 0, "\(headless)")
        #expect(headless.output == "\(cli.gateway)/\n", "on a machine without a desktop the address is printed")
    }
}
