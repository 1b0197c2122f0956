import ArgumentParser

struct OpenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "open",
        abstract: "Open the gateway's web page in your browser, or print its URL when there is none."
    )

    @OptionGroup var global: GlobalOptions

    func run() async throws {
        let url = global.gatewayURL + "/"
        Terminal.standardOutput(await Browser.open(url) ? "opened \(url)" : url)
    }
}
