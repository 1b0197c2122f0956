import ArgumentParser
import Foundation
import OnTheMapClient

struct SignUpCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "signup",
        abstract: "Create an account on the gateway, then log in with it.",
        discussion: "Asks on the terminal for what the options do not give; the password twice, without echo."
    )

    @OptionGroup var global: GlobalOptions

    @Option(help: "Your email address.") var email: String?
    @Option(help: "Your first name, as others will see it.") var firstName: String?
    @Option(help: "Your last name, as others will see it.") var lastName: String?
    @Flag(help: "Read the password from the first line of stdin (for scripts).") var passwordStdin = false

    func run() async throws {
        try await global.perform {
            let firstName = try self.firstName ?? Prompts.required("First name: ")
            let lastName = try self.lastName ?? Prompts.required("Last name: ")
            let email = try self.email ?? Prompts.required("Email: ")
            let password: String
            if passwordStdin {
                password = try Prompts.passwordFromStandardInput()
            } else {
                password = try Prompts.password("Password (8+ characters): ")
                guard try Prompts.password("Password again: ") == password else {
                    throw CommandFailure("the passwords differ; nothing was created", .usage)
                }
            }
            let client = global.client()
            _ = try await Spinner.run("creating your account…") {
                try await client.signUp(email: email, password: password, firstName: firstName, lastName: lastName)
            }
            let profile = try await LogInCommand.logIn(client: client, email: email, password: password, global: global)
            Terminal.standardOutput("signed up and logged in as \(profile.fullName) <\(email)> on \(client.gateway)")
        }
    }
}
