import ArgumentParser
import Foundation
import OnTheMapClient
import OnTheMapShared

/// Options every command takes.
struct GlobalOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("The gateway's URL (default: $ONTHEMAP_GATEWAY, else http://127.0.0.1:8080).", valueName: "url"))
    var gateway: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "The class map to work on, such as ios-2027, or \(Self.defaultMapName) for the gateway's own map (default: the one chosen with maps use, else the gateway's own).",
            valueName: "slug"))
    var map: String?

    @Flag(name: .long, help: "Print each HTTP exchange on stderr (passwords and session ids redacted).")
    var verbose = false

    static let defaultGateway = "http://127.0.0.1:8080"
    /// What `--map` calls the gateway's own map, which has no slug (the word is reserved, so no class map has it).
    static let defaultMapName = "default"

    func validate() throws {
        guard let map, map != Self.defaultMapName, MapSlug(map) == nil else { return }
        if MapSlug(map.lowercased()) != nil { throw ValidationError("--map \(map): slugs are lower case; did you mean \(map.lowercased())?") }
        throw ValidationError("--map \(map): \(MapSlug.rule)")
    }

    /// The gateway URL in one spelling, so one gateway has one session file.
    var gatewayURL: String {
        var url = (gateway ?? Console.current.environment["ONTHEMAP_GATEWAY"]).flatMap { $0.isEmpty ? nil : $0 } ?? Self.defaultGateway
        url = url.trimmingCharacters(in: .whitespaces)
        if !url.contains("://") { url = "http://" + url }
        while url.hasSuffix("/") { url.removeLast() }
        return url
    }

    /// A client of the gateway, with the stored session when there is one.
    func client(session: Session? = nil) -> OnTheMapClient {
        var client = OnTheMapClient(gateway: gatewayURL, session: session, transport: Console.current.transport)
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

    /// The class map the pins' commands work on: `--map`, else the one kept with `maps use`; nil for the
    /// gateway's own map.
    var chosenMap: String? {
        if let map { return map == Self.defaultMapName ? nil : map }
        return SessionStore().defaultMap(gateway: gatewayURL)
    }

    /// The chosen class map, for a command that needs one.
    func requiredMap() throws -> String {
        guard let map = chosenMap else {
            throw CommandFailure("which map? name it with --map SLUG, or choose one with: onthemap maps use SLUG", .usage)
        }
        return map
    }

    /// A client of the chosen map, with the stored session when there is one: a class map may show its pins to
    /// its members alone.
    func mapClient() throws -> OnTheMapClient {
        var client = client(session: try SessionStore().load(gateway: gatewayURL))
        client.map = chosenMap
        return client
    }

    /// A client of the chosen map with this gateway's stored session; `notLoggedIn` when there is none.
    func loggedInMapClient() throws -> OnTheMapClient {
        var client = try loggedInClient()
        client.map = chosenMap
        return client
    }

    /// ` on ios-2027` after what a command did, when it was on a class map.
    static func onMap(_ client: OnTheMapClient) -> String {
        client.map.map { " on \($0)" } ?? ""
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
