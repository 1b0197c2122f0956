import ArgumentParser
import Foundation
import OnTheMapClient
import OnTheMapShared

struct MapsJoinCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "join",
        abstract: "Join a class map with an invite: its link, or its code with --map.",
        discussion: "On a map that approves its members you wait, pending, until a moderator lets you in."
    )

    @OptionGroup var global: GlobalOptions

    // Codes are base64url, so one may begin with `-`: taken as it is, not as an option.
    @Argument(
        parsing: .allUnrecognized, help: ArgumentHelp("The invite's link (…/maps/SLUG/join/CODE), or its code alone.", valueName: "invite"))
    var words: [String]
    @Flag(help: "Work on the map from now on, as maps use does.") var use = false

    var invite: String { words.first ?? "" }

    func validate() throws {
        guard words.count == 1 else { throw ValidationError(words.isEmpty ? "name the invite: its link or its code" : "one invite at a time") }
    }

    func run() async throws {
        try await global.perform {
            var client = try global.loggedInClient()
            client.map = global.chosenMap
            guard let code = InviteCode(invite, map: client.map) else {
                let why = invite.contains("/") ? "not an invite link (…/maps/SLUG/join/CODE)" : "an invite's code alone needs its map: --map SLUG"
                throw CommandFailure("\(why): \(invite)", .usage)
            }
            let member = try await Spinner.run("joining \(code.map)…") { try await client.join(code) }
            if use { try SessionStore().saveDefaultMap(code.map, gateway: client.gateway) }
            if member.role == .pending {
                Terminal.standardOutput("asked to join \(code.map); a moderator has to let you in before you see its pins")
                return
            }
            let next = use ? "onthemap post" : "onthemap post --map \(code.map)"
            Terminal.standardOutput("joined \(code.map) as \(member.role.rawValue); post there with: \(next)")
        }
    }
}

struct MapsLeaveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "leave",
        abstract: "Leave the map; coming back takes a new invite. Its owner hands it on or deletes it instead."
    )

    @OptionGroup var global: GlobalOptions

    @Flag(help: "Leave without asking.") var yes = false

    func run() async throws {
        try await global.perform {
            let slug = try global.requiredMap()
            let client = try global.loggedInClient()
            guard try Prompts.confirm("Leave \(slug)? Coming back takes a new invite.", defaultAnswer: false, yes: yes) else {
                throw CommandFailure("still on \(slug)", .cancelled)
            }
            try await Spinner.run("leaving \(slug)…") { try await client.leave(slug) }
            Terminal.standardOutput("left \(slug)" + MapOutput.forgetIfUsed(slug, gateway: client.gateway))
        }
    }
}

struct MapsMembersCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "members",
        abstract: "List the map's members with their roles (moderators and its owner).",
        discussion: "Those who wait for approval show as pending; let one in with: onthemap maps role KEY member."
    )

    @OptionGroup var global: GlobalOptions

    @Flag(help: "Print the members as JSON ({\"results\":[…]}), for jq and other programs.") var json = false

    func run() async throws {
        try await global.perform {
            let slug = try global.requiredMap()
            let client = try global.loggedInClient()
            let members = try await Spinner.run("loading the members of \(slug)…") { try await client.members(slug) }
            if json {
                Terminal.standardOutput(bytes: try MapOutput.json(members))
                return
            }
            Terminal.standardOutput(MapTables.members(members, width: Terminal.width).joined(separator: "\n"))
        }
    }
}

struct MapsRemoveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "remove",
        abstract: "Take a member off the map, their pins with them, or turn down one who waits (moderators).",
        discussion: "An invite made before cannot bring them back; a new one can."
    )

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The member's account key (see maps members).") var key: String
    @Flag(help: "Remove without asking.") var yes = false

    func run() async throws {
        try await global.perform {
            let slug = try global.requiredMap()
            let client = try global.loggedInClient()
            guard try Prompts.confirm("Remove \(key) from \(slug)? Their pins leave the map.", defaultAnswer: false, yes: yes) else {
                throw CommandFailure("nobody removed", .cancelled)
            }
            try await Spinner.run("removing \(key)…") { try await client.removeMember(key, from: slug) }
            Terminal.standardOutput("removed \(key) from \(slug)")
        }
    }
}

struct MapsRoleCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "role",
        abstract: "Give a member a role on the map (its owner); member lets in one who waits (moderators too).",
        discussion: "owner hands the map on: it is theirs from then on."
    )

    enum Role: String, ExpressibleByArgument, CaseIterable {
        case member, moderator, owner

        var role: MapRole {
            switch self {
            case .member: .member
            case .moderator: .moderator
            case .owner: .owner
            }
        }
    }

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The member's account key (see maps members).") var key: String
    @Argument(help: "member, moderator or owner.") var role: Role
    @Flag(help: "Hand the map on without asking.") var yes = false

    func run() async throws {
        try await global.perform {
            let slug = try global.requiredMap()
            let client = try global.loggedInClient()
            if role == .owner {
                guard try Prompts.confirm("Hand \(slug) to \(key)? It is theirs from then on.", defaultAnswer: false, yes: yes) else {
                    throw CommandFailure("\(slug) is still yours", .cancelled)
                }
            }
            let member = try await Spinner.run("giving \(key) the role \(role.rawValue)…") { try await client.setRole(role.role, of: key, on: slug) }
            let name = member.fullName.isEmpty ? member.key : "\(member.fullName) (\(member.key))"
            Terminal.standardOutput("\(name) is now \(member.role.rawValue) on \(slug)")
        }
    }
}
