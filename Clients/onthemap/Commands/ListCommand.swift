import ArgumentParser
import Foundation
import OnTheMapClient

struct ListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List the latest pins, newest first."
    )

    @OptionGroup var global: GlobalOptions

    @Option(help: "How many pins (the gateway reads at most 1000).") var limit: Int = 100
    @Flag(help: "Only your own pins (needs a login).") var mine = false
    @Flag(help: "Print the gateway's JSON as it came, for jq and other programs.") var json = false

    func validate() throws {
        guard limit > 0 else { throw ValidationError("--limit must be at least 1") }
    }

    func run() async throws {
        try await global.perform {
            let client = mine ? try global.loggedInClient() : global.client()
            let query = OnTheMapClient.ListQuery(limit: limit == 100 ? nil : limit, uniqueKey: mine ? client.session?.accountKey : nil)
            if json {
                var bytes = try await client.listJSON(query)
                bytes.append(UInt8(ascii: "\n"))
                FileHandle.standardOutput.write(Data(bytes))
                return
            }
            let pins = try await Spinner.run("loading pins…") { try await client.list(query) }
            if pins.isEmpty {
                Terminal.standardError(mine ? "you have no pin yet; post one with: onthemap post" : "no pins yet")
                return
            }
            Terminal.standardOutput(PinTable.render(pins, width: Terminal.width).joined(separator: "\n"))
        }
    }
}
