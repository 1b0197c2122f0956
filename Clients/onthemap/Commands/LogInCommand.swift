import ArgumentParser
import Foundation
import OnTheMapClient

struct LogInCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "login",
        abstract: "Log in to the gateway and keep the session for the other commands.",
        discussion: """
            The password is asked on the terminal without echo, or read from stdin with --password-stdin.

            With --browser you sign in at the gateway's identity provider (OpenID Connect) instead, in a web browser \
            on this machine: $BROWSER, else the desktop's. The address to open is printed too, for when none opens. \
            The browser comes back to this command on 127.0.0.1; it waits 5 minutes for it, and Ctrl-C stops it.
            """
    )

    @OptionGroup var global: GlobalOptions

    @Argument(help: "Your email address (asked when left out).") var email: String?
    @Flag(help: "Read the password from the first line of stdin (for scripts).") var passwordStdin = false
    @Flag(help: "Sign in with the gateway's identity provider in a web browser, without a password here.") var browser = false

    func validate() throws {
        guard browser else { return }
        if email != nil { throw ValidationError("--browser signs in at the identity provider: leave out the email") }
        if passwordStdin { throw ValidationError("--browser and --password-stdin cannot be used together") }
    }

    func run() async throws {
        try await global.perform {
            if browser {
                try await BrowserLogIn.run(global: global)
                return
            }
            let email = try self.email ?? Prompts.required("Email: ")
            let password = try passwordStdin ? Prompts.passwordFromStandardInput() : Prompts.password("Password: ")
            let client = global.client()
            let profile = try await Self.logIn(client: client, email: email, password: password, global: global)
            Terminal.standardOutput(Self.loggedIn(profile, email: email, gateway: client.gateway))
        }
    }

    /// Logs in, keeps the session for this gateway, and answers who it belongs to.
    static func logIn(client: OnTheMapClient, email: String, password: String, global: GlobalOptions) async throws -> UserProfile {
        try await Spinner.run("logging in…") {
            try await keep(try await client.logIn(email: email, password: password), gateway: client.gateway, global: global)
        }
    }

    /// Keeps a new session for `gateway`, as every way of logging in does, and answers who it belongs to.
    static func keep(_ session: Session, gateway: String, global: GlobalOptions) async throws -> UserProfile {
        try SessionStore().save(session, gateway: gateway)
        return try await global.client(session: session).me()
    }

    /// `logged in as Ada Lovelace <ada@example.com> on http://127.0.0.1:8080`.
    static func loggedIn(_ profile: UserProfile, email: String, gateway: String) -> String {
        "logged in as \(profile.fullName)\(email.isEmpty ? "" : " <\(email)>") on \(gateway)"
    }
}

struct LogOutCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "logout",
        abstract: "End the session on the gateway, then forget it here."
    )

    @OptionGroup var global: GlobalOptions

    func run() async throws {
        try await global.perform {
            let store = SessionStore()
            guard try store.load(gateway: global.gatewayURL) != nil else {
                Terminal.standardOutput("not logged in to \(global.gatewayURL)")
                return
            }
            let client = try global.loggedInClient()
            try await Spinner.run("logging out…") { try await client.logOut() }
            store.forget(gateway: client.gateway)
            Terminal.standardOutput("logged out of \(client.gateway)")
        }
    }
}

struct WhoAmICommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "whoami",
        abstract: "Show who you are logged in as on the gateway (asks the gateway, so an ended session shows)."
    )

    @OptionGroup var global: GlobalOptions

    func run() async throws {
        try await global.perform {
            let client = try global.loggedInClient()
            let profile = try await Spinner.run("asking the gateway…") { try await client.me() }
            let email = profile.email.isEmpty ? "" : " <\(profile.email)>"
            Terminal.standardOutput("\(Terminal.style(profile.fullName, .bold))\(email) · key \(profile.key) · \(client.gateway)")
        }
    }
}
