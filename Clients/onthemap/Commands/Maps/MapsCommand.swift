import ArgumentParser
import Foundation
import OnTheMapClient
import OnTheMapShared

struct MapsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "maps",
        abstract: "Class maps: make one, invite students, join one, and look after its members and pins.",
        discussion: """
            A class map is a map of its own on the same gateway, at /maps/SLUG/. The pins' commands (list, post, \
            delete, history, watch, open) work on the map --map SLUG names, else the one chosen with maps use, else \
            the gateway's own map. The commands below work on that map too, but create, list, join and use.
            """,
        subcommands: [
            MapsListCommand.self, MapsCreateCommand.self, MapsShowCommand.self, MapsSetCommand.self, MapsDeleteCommand.self,
            MapsUseCommand.self, MapsInviteCommand.self, MapsInvitesCommand.self, MapsRevokeInviteCommand.self, MapsJoinCommand.self,
            MapsLeaveCommand.self, MapsMembersCommand.self, MapsRemoveCommand.self, MapsRoleCommand.self, MapsHideCommand.self,
            MapsUnhideCommand.self, MapsHiddenCommand.self,
        ],
        defaultSubcommand: MapsListCommand.self
    )
}

/// Who may read a map, as the options spell it.
enum ReadersOption: String, ExpressibleByArgument, CaseIterable {
    case members
    case `public`

    var access: ClassMap.ReadAccess {
        switch self {
        case .members: .members
        case .public: .public
        }
    }
}

/// Who may post on a map, as the options spell it.
enum PostersOption: String, ExpressibleByArgument, CaseIterable {
    case members
    case signedIn = "signed-in"

    var access: ClassMap.PostAccess {
        switch self {
        case .members: .members
        case .signedIn: .signedIn
        }
    }
}

struct MapsListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List the class maps you are on, newest first, with your role on each."
    )

    @OptionGroup var global: GlobalOptions

    @Flag(help: "Print the maps as JSON ({\"results\":[…]}), for jq and other programs.") var json = false

    func run() async throws {
        try await global.perform {
            let client = try global.loggedInClient()
            let maps = try await Spinner.run("loading your maps…") { try await client.myMaps() }
            if json {
                Terminal.standardOutput(bytes: try MapOutput.json(maps))
                return
            }
            guard !maps.isEmpty else {
                Terminal.standardError("you are on no class map yet; make one with: onthemap maps create SLUG, or join one: onthemap maps join URL")
                return
            }
            Terminal.standardOutput(MapTables.maps(maps, width: Terminal.width).joined(separator: "\n"))
        }
    }
}

struct MapsCreateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "create",
        abstract: "Make a class map, with you as its owner, and print its address.",
        discussion: "Students join it with an invite: onthemap maps invite --map SLUG."
    )

    @OptionGroup var global: GlobalOptions

    @Argument(help: "Its name in addresses: 3 to 40 of a-z, 0-9 and -, such as ios-2027.") var slug: String
    @Option(help: "Its name as people see it (default: the slug).") var name: String?
    @Option(help: "Who sees its pins (public: anyone).") var read: ReadersOption = .members
    @Option(help: "Who may post on it (signed-in: anyone logged in).") var post: PostersOption = .members
    @Option(help: "How many pins each student may have on it, 1-100 (default 3).") var pinsPerStudent: Int?
    @Flag(help: "Students who join wait until a moderator approves them.") var approval = false
    @Flag(help: "Work on it from now on, as maps use does.") var use = false

    func validate() throws {
        guard MapSlug(slug) != nil else { throw ValidationError("\(slug): \(MapSlug.rule)") }
    }

    func run() async throws {
        try await global.perform {
            let client = try global.loggedInClient()
            let settings = MapSettings(
                name: name ?? slug, read: read.access, post: post.access, pinsPerStudent: pinsPerStudent, approval: approval)
            let map = try await Spinner.run("creating \(slug)…") { try await client.createMap(slug: slug, settings: settings) }
            if use { try SessionStore().saveDefaultMap(map.slug, gateway: client.gateway) }
            Terminal.standardOutput("created \(MapTables.describe(map))")
            Terminal.standardOutput(MapOutput.address(map.url, gateway: client.gateway))
            if Terminal.isTerminal(STDERR_FILENO) {
                Terminal.standardError("invite students with: onthemap maps invite --map \(map.slug)")
            }
        }
    }
}

struct MapsShowCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "Show the map's settings, your role on it and its address."
    )

    @OptionGroup var global: GlobalOptions

    @Flag(help: "Print the map as JSON, for jq and other programs.") var json = false

    func run() async throws {
        try await global.perform {
            let slug = try global.requiredMap()
            let client = global.client(session: try SessionStore().load(gateway: global.gatewayURL))
            let map = try await Spinner.run("loading \(slug)…") { try await client.classMap(slug) }
            if json {
                Terminal.standardOutput(bytes: try MapOutput.json(map))
                return
            }
            Terminal.standardOutput(MapTables.describe(map))
            Terminal.standardOutput(MapOutput.address(map.url, gateway: client.gateway))
        }
    }
}

struct MapsSetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set",
        abstract: "Change the map's settings (its owner only); what is not given stays."
    )

    @OptionGroup var global: GlobalOptions

    @Option(help: "Its name as people see it.") var name: String?
    @Option(help: "Who sees its pins (public: anyone).") var read: ReadersOption?
    @Option(help: "Who may post on it (signed-in: anyone logged in).") var post: PostersOption?
    @Option(help: "How many pins each student may have on it, 1-100.") var pinsPerStudent: Int?
    @Flag(inversion: .prefixedNo, help: "Whether students who join wait until a moderator approves them.") var approval: Bool?

    func validate() throws {
        if name == nil, read == nil, post == nil, pinsPerStudent == nil, approval == nil {
            throw ValidationError("say what to change: --name, --read, --post, --pins-per-student or --[no-]approval")
        }
    }

    func run() async throws {
        try await global.perform {
            let slug = try global.requiredMap()
            let client = try global.loggedInClient()
            let settings = MapSettings(name: name, read: read?.access, post: post?.access, pinsPerStudent: pinsPerStudent, approval: approval)
            let map = try await Spinner.run("changing \(slug)…") { try await client.updateMap(slug, settings) }
            Terminal.standardOutput("changed \(MapTables.describe(map))")
        }
    }
}

struct MapsDeleteCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete",
        abstract: "Delete the map and every pin on it (its owner only).",
        discussion: """
            It cannot be undone. On a terminal you confirm by typing the map's slug; without a terminal it deletes \
            only with --yes.
            """
    )

    @OptionGroup var global: GlobalOptions

    @Flag(help: "Delete without asking (needed without a terminal).") var yes = false

    func run() async throws {
        try await global.perform {
            let slug = try global.requiredMap()
            let client = try global.loggedInClient()
            if !yes {
                guard Terminal.canAsk else { throw CommandFailure("no terminal to confirm deleting \(slug); pass --yes to delete it", .usage) }
                let warning = Terminal.style("This cannot be undone.", .bold, on: STDERR_FILENO)
                let prompt = "This deletes the map \(slug) on \(client.gateway) and every pin on it. \(warning)\nType \(slug) to delete it: "
                guard try Prompts.typed(prompt, expecting: slug) else { throw CommandFailure("nothing deleted", .cancelled) }
            }
            try await Spinner.run("deleting \(slug)…") { try await client.deleteMap(slug) }
            Terminal.standardOutput("deleted the map \(slug)" + MapOutput.forgetIfUsed(slug, gateway: client.gateway))
        }
    }
}

struct MapsUseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "use",
        abstract: "Choose the map the commands work on when --map does not say; without arguments, show it.",
        discussion: "The choice is kept for this gateway, beside its session."
    )

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The class map's slug, such as ios-2027.") var slug: String?
    @Flag(name: .customLong("default"), help: "Go back to the gateway's own map.") var useDefault = false

    func validate() throws {
        if slug != nil, useDefault { throw ValidationError("name a map or give --default, not both") }
        if let slug, slug != GlobalOptions.defaultMapName, MapSlug(slug) == nil { throw ValidationError("\(slug): \(MapSlug.rule)") }
    }

    func run() async throws {
        try await global.perform {
            let store = SessionStore()
            let gateway = global.gatewayURL
            guard let slug, slug != GlobalOptions.defaultMapName else {
                if useDefault || slug != nil {
                    store.forgetDefaultMap(gateway: gateway)
                    Terminal.standardOutput("the commands now work on the gateway's own map on \(gateway)")
                } else {
                    let map = store.defaultMap(gateway: gateway)
                    Terminal.standardOutput(
                        map.map { "the commands work on \($0) on \(gateway)" } ?? "the commands work on the gateway's own map on \(gateway)")
                }
                return
            }
            // Kept only once the gateway shows it to this account, so a mistyped slug fails here, not at every command after.
            let client = global.client(session: try store.load(gateway: gateway))
            let map = try await Spinner.run("looking for \(slug)…") { try await client.classMap(slug) }
            try store.saveDefaultMap(map.slug, gateway: gateway)
            Terminal.standardOutput("the commands now work on \(map.slug) (\(map.name)) on \(gateway); back with: onthemap maps use --default")
        }
    }
}

/// What the map commands print besides tables.
enum MapOutput {
    /// A whole address for a path the gateway gives (`/maps/ios-2027/`); an address stays as it is.
    static func address(_ url: String, gateway: String) -> String {
        url.hasPrefix("/") ? gateway + url : url
    }

    /// `{"results":[…]}`, as the gateway lists things, with sorted keys, for a program reading stdout.
    static func json<Item: Encodable>(_ results: [Item]) throws -> [UInt8] {
        try json(["results": results])
    }

    static func json(_ value: some Encodable) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array(try encoder.encode(value))
    }

    /// Forgets `slug` as the map the commands work on, if it was: `; the commands now work on the gateway's own
    /// map` then, nothing otherwise.
    static func forgetIfUsed(_ slug: String, gateway: String) -> String {
        let store = SessionStore()
        guard store.defaultMap(gateway: gateway) == slug else { return "" }
        store.forgetDefaultMap(gateway: gateway)
        return "; the commands now work on the gateway's own map"
    }
}
