import ArgumentParser
import OnTheMapClient
import OnTheMapShared

struct DeleteCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete",
        abstract: "Remove one of your pins (your latest when no id is given)."
    )

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The pin's objectId (see list --mine).") var objectId: String?
    @Flag(help: "Delete without asking.") var yes = false

    func run() async throws {
        try await global.perform {
            let client = try global.loggedInMapClient()
            let pin: StudentLocation
            if let objectId {
                pin = try await Spinner.run("finding the pin…") { try await client.location(ObjectID(objectId)) }
            } else {
                guard let latest = try await Spinner.run("finding your pin…", { try await client.ownPin() }) else {
                    throw CommandFailure("you have no pin to delete", .notFound)
                }
                pin = latest
            }
            guard try Prompts.confirm("Delete \(PinLine.describe(pin)) (\(pin.objectId))?", defaultAnswer: false, yes: yes) else {
                throw CommandFailure("nothing deleted", .cancelled)
            }
            try await Spinner.run("deleting…") { try await client.delete(pin.objectId) }
            Terminal.standardOutput("deleted \(pin.objectId)")
        }
    }
}
