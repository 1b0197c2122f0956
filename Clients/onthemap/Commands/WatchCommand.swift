import ArgumentParser
import Foundation
import OnTheMapClient
import OnTheMapShared

struct WatchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Follow pins as they are posted (+), moved (~) and removed (-). Ctrl-C stops.",
        discussion: """
            After a dropped connection it resumes from the last change it printed: nothing is missed or printed twice. \
            After an absence longer than the gateway replays, it prints the pins as they are now (=) and follows on from there.
            """
    )

    @OptionGroup var global: GlobalOptions

    func run() async throws {
        // Ctrl-C is how watching ends, not a failure.
        let interrupt = Terminal.onInterrupt {
            Spinner.clearLine()
            Foundation.exit(0)
        }
        defer { interrupt?.cancel() }
        try await global.perform {
            let client = try global.mapClient()
            let gateway = client.gateway
            if Terminal.isTerminal(STDERR_FILENO) { Terminal.standardError("watching \(gateway)\(GlobalOptions.onMap(client)); Ctrl-C stops") }
            let changes = client.liveChanges { status in
                switch status {
                case .connected: break
                case .disconnected(let error, _):
                    Terminal.standardError(Terminal.errorStyle("\(CommandFailure(error, gateway: gateway).message); reconnecting…"))
                }
            }
            for try await update in changes {
                switch update {
                case .change(let change):
                    Terminal.standardOutput(Self.line(change))
                case .reset:
                    // Too much changed while away to be told change by change: the map as it is now.
                    Terminal.standardError(Terminal.errorStyle("missed more changes than the gateway replays; the pins as they are now:"))
                    for pin in try await client.list() {
                        Terminal.standardOutput(Terminal.style("=", .cyan) + " " + PinLine.describe(pin))
                    }
                }
            }
        }
    }

    /// `+ Ada Lovelace · Berlin, Germany · https://…`, `~` for a move, `-` for a removal; a pin an operator
    /// hid leaves as a removal and comes back, once unhidden, as a new pin.
    static func line(_ change: LocationChangeEvent) -> String {
        switch change.type {
        case .posted, .unhidden: Terminal.style("+", .green) + " " + (change.location.map(PinLine.describe) ?? "")
        case .updated: Terminal.style("~", .yellow) + " " + (change.location.map(PinLine.describe) ?? "")
        case .deleted, .hidden: Terminal.style("-", .red) + " " + (change.deletion.map { "pin \($0.objectId) of \($0.uniqueKey)" } ?? "")
        }
    }
}
