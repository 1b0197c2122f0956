import Foundation
import OnTheMapClient
import OnTheMapShared
import TestSupport
import Testing

/// `onthemap login --browser` against the real system and a real OpenID Connect provider, with
/// `Tests/oidc/browse.py` as the browser the command opens.
@Suite(.serialized) struct BrowserLogInTests {
    static let opening = "Open this address in a browser to sign in: "

    /// A folder for the browser's command and its log.
    static func folder() throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("browser-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }

    @Test(Needs.django) func aStudentSignsInInTheBrowserPostsAPinAndLogsOut() async throws {
        try await ClientSystem.withSignIn { system, _ in
            let log = try Self.folder().appendingPathComponent("browse.log")
            let cli = CLI(gateway: system.url)
            let login = try await cli.run(["login", "--browser"], environmentAdding: ["BROWSER": try SignInProvider.browser(log: log).path])
            let visited = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            #expect(login.status == 0, "\(login)\nbrowser:\n\(visited)")
            #expect(login.output == "logged in as Alice Liddell <alice@school.example> on \(system.url)\n")
            #expect(login.errors.hasPrefix(Self.opening + system.url + "/v1/auth/oidc/login?cli_redirect=http%3A%2F%2F127.0.0.1%3A"), "\(login)")
            #expect(visited.contains("You are signed in to On The Map; you can close this tab."), "the browser saw the page: \(visited)")
            let file = cli.configFolder.appendingPathComponent("session-http___127.0.0.1_\(system.gateway.port).json").path
            #expect((try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int) == 0o600)

            let whoami = try await cli.run(["whoami"])
            #expect(whoami.status == 0)
            #expect(whoami.output.hasPrefix("Alice Liddell <alice@school.example> · key "), "\(whoami)")
            let post = try await cli.run(["post", "--location", "Oxford, England", "--link", "https://www.ox.ac.uk", "--yes"])
            #expect(post.status == 0, "\(post)")
            let pin = try await system.client().location(ObjectID(post.output.trimmingCharacters(in: .newlines)))
            #expect(pin.firstName == "Alice" && pin.lastName == "Liddell" && pin.mapString == "Oxford, England")
            let logout = try await cli.run(["logout"])
            #expect(logout.status == 0 && logout.output == "logged out of \(system.url)\n", "\(logout)")
            #expect(try await cli.run(["whoami"]).status == 5)
        }
    }

    @Test(Needs.django) func aSignInDeclinedAtTheProviderIsOneLineAndAFailure() async throws {
        try await ClientSystem.withSignIn { system, _ in
            let log = try Self.folder().appendingPathComponent("browse.log")
            let cli = CLI(gateway: system.url)
            let browser = try SignInProvider.browser(declining: true, log: log)
            let login = try await cli.run(["login", "--browser"], environmentAdding: ["BROWSER": browser.path])
            #expect(login.status == 1, "\(login)")
            #expect(login.output.isEmpty)
            let lines = login.errors.split(separator: "\n")
            #expect(lines.count == 2 && lines[0].hasPrefix(Self.opening), "\(login)")
            #expect(
                lines.last
                    == "the sign-in failed: The identity provider did not vouch for this sign-in: it answered access_denied (The student declined). Sign in again."
            )
            #expect(!FileManager.default.fileExists(atPath: cli.configFolder.path), "no session kept")
        }
    }

    @Test(Needs.django) func withNoBrowserTheAddressIsPrintedToOpenByHand() async throws {
        try await ClientSystem.withSignIn { system, _ in
            let cli = CLI(gateway: system.url)
            let login = try cli.start(["login", "--browser"], environmentAdding: ["BROWSER": "/bin/false"])
            let line = try await login.errorLine(startingWith: Self.opening, within: .seconds(10))
            _ = try await login.errorLine(startingWith: "could not open a browser; open the address above", within: .seconds(10))
            let browsed = try SignInProvider.browse(String(line.dropFirst(Self.opening.count)))
            #expect(browsed.status == 0, "\(browsed.output)")
            #expect(await login.status(within: .seconds(10)) == 0, "\(login.errors)")
            #expect(login.output == "logged in as Alice Liddell <alice@school.example> on \(system.url)\n")
            #expect(try await cli.run(["whoami"]).output.hasPrefix("Alice Liddell"))
        }
    }

    @Test func ctrlCStopsTheWaitForTheBrowser() async throws {
        // The gateway's provider is never asked: nothing opens the address.
        let system = try await ClientSystem.start(gatewayEnvironment: SignInProvider.nowhere)
        defer { system.stop() }
        let login = try CLI(gateway: system.url).start(["login", "--browser"], environmentAdding: ["BROWSER": "/bin/true"])
        _ = try await login.errorLine(startingWith: Self.opening, within: .seconds(10))
        #expect(await login.interrupt() == 10)
        #expect(login.errors.hasSuffix("\ncancelled\n"), "\(login.errors)")
    }

    @Test func aGatewayWithoutAProviderSaysSoAtOnce() async throws {
        try await ClientSystem.with { system in
            let login = try await CLI(gateway: system.url).run(["login", "--browser"], environmentAdding: ["BROWSER": "/bin/false"])
            #expect(login.status == 1)
            #expect(login.errors == "\(system.url) has no sign-in with an identity provider; log in with your email: onthemap login\n")
            #expect(login.elapsed < .seconds(2))
        }
    }

    @Test func theBrowserAndAPasswordAreOneOrTheOther() async throws {
        let cli = CLI(gateway: deadGatewayURL())
        let withEmail = try await cli.run(["login", "--browser", "ada@example.com"])
        #expect(withEmail.status == 64)
        #expect(withEmail.errors.hasPrefix("Error: --browser signs in at the identity provider: leave out the email\n"))
        let withPassword = try await cli.run(["login", "--browser", "--password-stdin"], input: "secret\n")
        #expect(withPassword.status == 64)
        #expect(withPassword.errors.hasPrefix("Error: --browser and --password-stdin cannot be used together\n"))
        let help = try await cli.run(["login", "--help"])
        #expect(help.output.contains("--browser"))
        #expect(help.output.contains("With --browser you sign in at the gateway's identity provider"))
    }
}
