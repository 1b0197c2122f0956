import ArgumentParser
import OnTheMapClient
import OnTheMapShared

struct GeocodeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "geocode",
        abstract: "Look a place up as the gateway would for a pin, best match first."
    )

    @OptionGroup var global: GlobalOptions

    @Argument(help: "A place, such as \"Patiala, Punjab\" or \"Mountain View, CA\".") var place: String
    @Option(help: "How many candidates (1-20).") var limit: Int = 5

    func run() async throws {
        try await global.perform {
            let client = global.client()
            let candidates = try await Spinner.run("looking up \(place)…") { try await client.geocode(place, limit: limit) }
            let rows = candidates.map { [$0.displayName, PinLine.coordinates($0.latitude, $0.longitude)] }
            Terminal.standardOutput(
                PinTable.table(headers: ["PLACE", "COORDINATES"], rows: rows, width: Terminal.width, shrinkable: [0])
                    .joined(separator: "\n"))
        }
    }
}
