import ArgumentParser
import Foundation
import OnTheMapClient

/// Options every command takes.
struct GlobalOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("The gateway's URL (default: $ONTHEMAP_GATEWAY, else http://127.0.0.1:8080).", valueName: "url"))
    var gateway: String?

    @Flag(name: .long, help: "Print each HTTP exchange on stderr (passwords and session ids redacted).")
    var verbose = false

    static let defaultGateway = "http://127.0.0.1:8080"

    /// The gateway URL in one spelling, so one gateway has one session file.
    var gatewayURL: String {
        var url = (gateway ?? ProcessInfo.processInfo.environment["ONTHEMAP_GATEWAY"]).flatMap { $0.isEmpty ? nil : $0 } ?? Self.defaultGateway
        url = url.trimmingCharacters(in: .whitespaces)
        if !url.contains("://") { url = "http://" + url }
        while url.hasSuffix("/") { url.removeLast() }
        return url
    }

    /// A client of the gateway, with the stored session when there is one.
    func client(session: Session? = nil) -> OnTheMapClient {
        var client = OnTheMapClient(gateway: gatewayURL, session: session)
        if verbose {
            client.exchangeLog = { text in Terminal.standardError(text) }
        }
        return client
    }

    /// A client with this gateway's stored session; `notLoggedIn` when there is none.
    func loggedInClient() throws -> OnTheMapClient {
        guard let session = try SessionStore().load(gateway: gatewayURL) else {
            throw CommandFailure(OnTheMapError.notLoggedIn(message: "not logged in"), gateway: gatewayURL)
        }
        return client(session: session)
    }

    /// Runs a command's work, turning every failure into one line on stderr and its exit status.
    func perform(_ work: () async throws -> Void) async throws {
        do {
            try await work()
        } catch let error as OnTheMapError {
            try fail(CommandFailure(error, gateway: gatewayURL))
        } catch let failure as CommandFailure {
            try fail(failure)
        }
    }

    private func fail(_ failure: CommandFailure) throws -> Never {
        Terminal.standardError(Terminal.errorStyle(failure.message))
        throw ExitCode(failure.status.rawValue)
    }
}
