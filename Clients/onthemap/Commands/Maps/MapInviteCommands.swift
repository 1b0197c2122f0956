import ArgumentParser
import Foundation
import OnTheMapClient

/// How long an invite works: `90s`, `30m`, `12h`, `7d`, or seconds alone.
struct Lifetime: ExpressibleByArgument {
    var duration: Duration

    init?(argument: String) {
        let units: [Character: Int64] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
        let text = argument.trimmingCharacters(in: .whitespaces).lowercased()
        guard let last = text.last else { return nil }
        let unit = units[last]
        guard let count = Int64(unit == nil ? text : String(text.dropLast())), count > 0, count <= 400 * 86_400 else { return nil }
        duration = .seconds(count * (unit ?? 1))
    }
}

struct MapsInviteCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "invite",
        abstract: "Make an invite to the map and print its link (moderators and its owner).",
        discussion: """
            Whoever opens the link logged in, or joins with it (onthemap maps join LINK), becomes a member. \
            Stop it early with: onthemap maps revoke-invite CODE.
            """
    )

    @OptionGroup var global: GlobalOptions

    @Option(help: ArgumentHelp("How long it works, 1 minute to 365 days: 30m, 12h, 7d (default: until revoked).", valueName: "time"))
    var expires: Lifetime?
    @Option(help: "How many may join with it, 1-10000 (default: any number).") var uses: Int?

    func run() async throws {
        try await global.perform {
            let slug = try global.requiredMap()
            let client = try global.loggedInClient()
            let invite = try await Spinner.run("making an invite to \(slug)…") {
                try await client.createInvite(on: slug, expiresIn: expires?.duration, uses: uses)
            }
            Terminal.standardOutput(MapOutput.address(invite.url, gateway: client.gateway))
            if Terminal.isTerminal(STDERR_FILENO) {
                let expiry = invite.expiresAt.map { "works until \($0.iso8601)" } ?? "works until revoked"
                let limit = invite.uses.map { $0 == 1 ? "for 1 student" : "for \($0) students" } ?? "for any number of students"
                Terminal.standardError("anyone logged in who opens it joins \(slug); it \(expiry), \(limit)")
            }
        }
    }
}

struct MapsInvitesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "invites",
        abstract: "List the map's invites that still work (moderators and its owner)."
    )

    @OptionGroup var global: GlobalOptions

    @Flag(help: "Print the invites as JSON ({\"results\":[…]}), for jq and other programs.") var json = false

    func run() async throws {
        try await global.perform {
            let slug = try global.requiredMap()
            let client = try global.loggedInClient()
            let invites = try await Spinner.run("loading the invites to \(slug)…") { try await client.invites(slug) }
            if json {
                Terminal.standardOutput(bytes: try MapOutput.json(invites))
                return
            }
            guard !invites.isEmpty else {
                Terminal.standardError("no invite to \(slug) works now; make one with: onthemap maps invite")
                return
            }
            Terminal.standardOutput(MapTables.invites(invites, width: Terminal.width).joined(separator: "\n"))
        }
    }
}

struct MapsRevokeInviteCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "revoke-invite",
        abstract: "Stop an invite from working; who joined with it stays (moderators and its owner)."
    )

    @OptionGroup var global: GlobalOptions

    // Codes are base64url, so one may begin with `-`: taken as it is, not as an option.
    @Argument(parsing: .allUnrecognized, help: ArgumentHelp("The invite's code (see maps invites), or its link.", valueName: "invite"))
    var words: [String]

    var invite: String { words.first ?? "" }

    func validate() throws {
        guard words.count == 1 else { throw ValidationError(words.isEmpty ? "name the invite: its code or its link" : "one invite at a time") }
    }

    func run() async throws {
        try await global.perform {
            let client = try global.loggedInClient()
            // A link names its map; a code alone is the chosen map's.
            let map = invite.contains("/") ? nil : try global.requiredMap()
            guard let code = InviteCode(invite, map: map) else {
                throw CommandFailure("not an invite link (…/maps/SLUG/join/CODE): \(invite)", .usage)
            }
            try await Spinner.run("revoking…") { try await client.revokeInvite(code.code, on: code.map) }
            Terminal.standardOutput("revoked the invite \(code.code) to \(code.map)")
        }
    }
}
