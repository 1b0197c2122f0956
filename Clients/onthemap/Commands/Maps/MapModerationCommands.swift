import ArgumentParser
import Foundation
import OnTheMapClient
import OnTheMapShared

struct MapsHideCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hide",
        abstract: "Take a pin off the map, saying why (moderators and its owner).",
        discussion: "Its owner cannot change it until it is back: onthemap maps unhide OBJECT_ID."
    )

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The pin's objectId (see list --json).") var objectId: String
    @Option(help: "Why, for the map's moderators (kept with the pin's history).") var reason: String

    func validate() throws {
        guard !reason.trimmingCharacters(in: .whitespaces).isEmpty else { throw ValidationError("--reason must say why") }
    }

    func run() async throws {
        try await global.perform {
            let slug = try global.requiredMap()
            let client = try global.loggedInClient()
            let hidden = try await Spinner.run("hiding \(objectId)…") { try await client.hide(ObjectID(objectId), on: slug, reason: reason) }
            Terminal.standardOutput("hid \(hidden.pin.objectId) (\(PinLine.describe(hidden.pin))) on \(slug): \(hidden.reason)")
        }
    }
}

struct MapsUnhideCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "unhide",
        abstract: "Bring a hidden pin back on the map, as it was hidden (moderators and its owner)."
    )

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The pin's objectId (see maps hidden).") var objectId: String
    @Option(help: "Why, for the map's moderators.") var reason: String?

    func run() async throws {
        try await global.perform {
            let slug = try global.requiredMap()
            let client = try global.loggedInClient()
            let pin = try await Spinner.run("bringing \(objectId) back…") { try await client.unhide(ObjectID(objectId), on: slug, reason: reason) }
            Terminal.standardOutput("brought back \(pin.objectId) (\(PinLine.describe(pin))) on \(slug)")
        }
    }
}

struct MapsHiddenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hidden",
        abstract: "List the pins taken off the map, with why (moderators and its owner)."
    )

    @OptionGroup var global: GlobalOptions

    @Flag(help: "Print the hidden pins as JSON ({\"results\":[…]}), for jq and other programs.") var json = false

    func run() async throws {
        try await global.perform {
            let slug = try global.requiredMap()
            let client = try global.loggedInClient()
            let pins = try await Spinner.run("loading the hidden pins of \(slug)…") { try await client.hiddenPins(slug) }
            if json {
                Terminal.standardOutput(bytes: try MapOutput.json(pins))
                return
            }
            guard !pins.isEmpty else {
                Terminal.standardError("no pin is hidden on \(slug)")
                return
            }
            Terminal.standardOutput(MapTables.hidden(pins, width: Terminal.width).joined(separator: "\n"))
        }
    }
}
