import ArgumentParser

struct OpenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "open",
        abstract: "Open the map's web page in your browser, or print its URL when there is none."
    )

    @OptionGroup var global: GlobalOptions

    func run() async throws {
        let url = global.gatewayURL + (global.chosenMap.map { "/maps/\($0)/" } ?? "/")
        Terminal.standardOutput(await Browser.open(url) ? "opened \(url)" : url)
    }
}
