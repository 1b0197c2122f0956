import ArgumentParser
import Foundation
import OnTheMapClient

struct ForgetMeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "forget-me",
        abstract: "Erase your account and every pin of yours, past and present, then log out.",
        discussion: """
            Afterwards nothing of yours shows anywhere: not on the map, not at any past moment, not in any pin's \
            history. It cannot be undone. On a terminal you confirm by typing your email address; without a \
            terminal it erases only with --yes.
            """
    )

    @OptionGroup var global: GlobalOptions

    @Flag(help: "Erase without asking (needed without a terminal).") var yes = false

    func run() async throws {
        try await global.perform {
            let client = try global.loggedInClient()
            if !yes {
                guard Terminal.canAsk else {
                    throw CommandFailure("no terminal to confirm erasing your account; pass --yes to erase it", .usage)
                }
                let profile = try await Spinner.run("asking the gateway…") { try await client.me() }
                let word = profile.email.isEmpty ? profile.key : profile.email
                let warning = Terminal.style("This cannot be undone.", .bold, on: STDERR_FILENO)
                let what =
                    "This erases the account of \(profile.fullName) (key \(profile.key)) on \(client.gateway) and every pin of it, past and present."
                let prompt = "\(what) \(warning)\nType \(word) to erase it: "
                guard try Prompts.typed(prompt, expecting: word) else { throw CommandFailure("nothing erased", .cancelled) }
            }
            let erased = try await Spinner.run("erasing…") { try await client.eraseAccount() }
            SessionStore().forget(gateway: client.gateway)
            let pins: String
            switch erased.pins {
            case 1?: pins = "1 pin, with all its history"
            case let count?: pins = "\(count) pins, with all their history"
            case nil: pins = "its pins (the gateway finishes erasing them once the locations service answers)"
            }
            Terminal.standardOutput("erased account \(erased.key) and \(pins); logged out of \(client.gateway)")
        }
    }
}
