import ArgumentParser
import OnTheMapClient
import OnTheMapShared

struct HistoryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "history",
        abstract: "Show what happened to a pin, oldest first (your own pin when no id is given).",
        discussion: """
            Each line's time is a moment list --at takes: the map then shows the pin as that line left it. \
            A deleted pin's history stays readable.
            """
    )

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The pin's objectId (see list --json); without it, your own pin (needs a login).") var objectId: String?
    @Flag(help: "Print the gateway's JSON as it came, for jq and other programs.") var json = false

    func run() async throws {
        try await global.perform {
            let client = objectId == nil ? try global.loggedInMapClient() : try global.mapClient()
            let id: ObjectID
            if let objectId { id = ObjectID(objectId) } else { id = try await ownPinID(client) }
            if json {
                Terminal.standardOutput(bytes: try await client.historyJSON(id))
                return
            }
            let history = try await Spinner.run("loading the history…") { try await client.history(id) }
            Terminal.standardOutput(HistoryTable.render(history, width: Terminal.width).joined(separator: "\n"))
        }
    }

    private func ownPinID(_ client: OnTheMapClient) async throws -> ObjectID {
        guard let pin = try await Spinner.run("finding your pin…", { try await client.ownPin() }) else {
            throw CommandFailure("you have no pin on the map; name one: onthemap history OBJECT_ID", .notFound)
        }
        return pin.objectId
    }
}
