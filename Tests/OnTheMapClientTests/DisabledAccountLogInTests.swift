import Foundation
import OnTheMapClient
import TestSupport
import Testing

/// A student whose account the people running the gateway disabled is told so, not that the password is wrong.
@Suite(.serialized) struct DisabledAccountLogInTests {
    static let password = "correct horse battery"

    /// `auth-gateway accounts disable EMAIL`, as an operator runs it beside the gateway.
    static func disable(_ email: String, in system: ClientSystem) async throws {
        let disabled = try await ServiceProcess.command(
            "auth-gateway", ["accounts", "disable", email, "--operator", "ops"],
            environment: ["DATABASE_URL": system.database.url, "LOG_LEVEL": "warning"])
        try #require(disabled.status == 0, "\(disabled.output)")
    }

    @Test func theLibraryTellsADisabledAccountFromAWrongPassword() async throws {
        try await ClientSystem.with { system in
            _ = try await system.student("grace@example.com", password: Self.password)
            try await Self.disable("grace@example.com", in: system)
            let client = system.client()
            let disabled = await thrownError { try await client.logIn(email: "grace@example.com", password: Self.password) }
            #expect(disabled == .accountDisabled)
            #expect(disabled?.description == "this account has been disabled")
            #expect(await thrownError { try await client.logIn(email: "grace@example.com", password: "not my password") } == .wrongCredentials)
        }
    }

    @Test func loginSaysTheAccountIsDisabledAndWhomToAsk() async throws {
        try await ClientSystem.with { system in
            let cli = CLI(gateway: system.url)
            try await cli.signUpAda(password: Self.password)
            try await Self.disable("ada@example.com", in: system)
            let login = try await cli.run(["login", "ada@example.com", "--password-stdin"], input: Self.password + "\n")
            #expect(login.status == 11)
            #expect(login.errors == "this account has been disabled on \(system.url); ask the people who run it to enable it\n")
            #expect(login.output.isEmpty)
            let wrong = try await cli.run(["login", "ada@example.com", "--password-stdin"], input: "not my password\n")
            #expect(wrong.status == 4)
            #expect(wrong.errors == "wrong email or password\n")
        }
    }
}
