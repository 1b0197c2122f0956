import ArgumentParser
import OnTheMapClient

struct ListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List the latest pins, newest first; with --at, the pins as they were at a past moment."
    )

    @OptionGroup var global: GlobalOptions

    @Option(help: "How many pins (the gateway reads at most 1000).") var limit: Int = 100
    @Flag(help: "Only your own pins (needs a login).") var mine = false
    @Option(
        help: ArgumentHelp(
            "The map as it was at this moment: 2026-11-26T09:30:00Z (fractions of a second or an offset such as +01:00 allowed), or a date, 2026-11-26 (its midnight, UTC). The times history prints are such moments.",
            valueName: "time"))
    var at: String?
    @Flag(help: "Print the gateway's JSON as it came, for jq and other programs.") var json = false

    func validate() throws {
        guard limit > 0 else { throw ValidationError("--limit must be at least 1") }
    }

    func run() async throws {
        try await global.perform {
            let client = mine ? try global.loggedInMapClient() : try global.mapClient()
            let query = OnTheMapClient.ListQuery(
                limit: limit == 100 ? nil : limit, uniqueKey: mine ? client.session?.accountKey : nil, at: at.map(Moment.init))
            do {
                try await show(query, client: client)
            } catch OnTheMapError.refused(let message, _) where at != nil {
                // The only refusable parameter a list from here sends: say which option it was.
                throw CommandFailure("--at \"\(at ?? "")\": \(message)", .refused)
            }
        }
    }

    private func show(_ query: OnTheMapClient.ListQuery, client: OnTheMapClient) async throws {
        if json {
            Terminal.standardOutput(bytes: try await client.listJSON(query))
            return
        }
        let pins = try await Spinner.run("loading pins…") { try await client.list(query) }
        if pins.isEmpty {
            let onMap = GlobalOptions.onMap(client)
            let empty = mine ? "you have no pin\(onMap) yet; post one with: onthemap post" : "no pins\(onMap) yet"
            Terminal.standardError(at.map { mine ? "you had no pin\(onMap) at \($0)" : "no pins\(onMap) at \($0)" } ?? empty)
            return
        }
        Terminal.standardOutput(PinTable.render(pins, width: Terminal.width).joined(separator: "\n"))
    }
}
