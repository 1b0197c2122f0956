import ArgumentParser
import Foundation
import OnTheMapClient
import OnTheMapShared

struct WatchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Follow pins as they are posted (+), moved (~) and removed (-). Ctrl-C stops.",
        discussion: "After a dropped connection it resumes from the last change it printed: nothing is missed or printed twice."
    )

    @OptionGroup var global: GlobalOptions

    func run() async throws {
        // Ctrl-C is how watching ends, not a failure.
        let interrupt = Terminal.onInterrupt {
            Spinner.clearLine()
            Foundation.exit(0)
        }
        defer { interrupt.cancel() }
        try await global.perform {
            let client = global.client()
            let gateway = client.gateway
            if Terminal.isTerminal(STDERR_FILENO) { Terminal.standardError("watching \(gateway); Ctrl-C stops") }
            let changes = client.liveChanges { status in
                switch status {
                case .connected: break
                case .disconnected(let error, _):
                    Terminal.standardError(Terminal.errorStyle("\(CommandFailure(error, gateway: gateway).message); reconnecting…"))
                }
            }
            for try await change in changes {
                Terminal.standardOutput(Self.line(change))
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
