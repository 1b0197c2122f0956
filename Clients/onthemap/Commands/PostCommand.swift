import ArgumentParser
import Foundation
import OnTheMapClient
import OnTheMapShared

struct PostCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "post",
        abstract: "Drop your pin: find the place, confirm it, and post it with your link.",
        discussion: """
            When you already have a pin it is moved (overwritten), as the apps do; --new adds another instead. \
            Prints the pin's objectId.
            """
    )

    @OptionGroup var global: GlobalOptions

    @Option(help: "Where you are, such as \"Patiala, Punjab\".") var location: String
    @Option(help: "A link you like; a bare domain gets https://.") var link: String
    @Flag(help: "Take the best match and overwrite your pin without asking.") var yes = false
    @Flag(help: "Add a new pin even if you already have one.") var new = false

    func validate() throws {
        guard !location.trimmingCharacters(in: .whitespaces).isEmpty else { throw ValidationError("--location must name a place") }
        guard !link.trimmingCharacters(in: .whitespaces).isEmpty else { throw ValidationError("--link must not be empty") }
    }

    func run() async throws {
        try await global.perform {
            let client = try global.loggedInMapClient()
            let place = location.trimmingCharacters(in: .whitespaces)
            let candidates: [GeocodeCandidate]
            do {
                candidates = try await Spinner.run("finding \(place)…") { try await client.geocode(place, limit: 5) }
            } catch OnTheMapError.notFound {
                throw CommandFailure("could not find \"\(place)\" on the map; try \"City, Region\"", .notFound)
            }
            let chosen = try choose(from: candidates)
            let pin = LocationInput(
                mapString: place, mediaURL: MediaLink.completed(link),
                latitude: chosen.latitude, longitude: chosen.longitude)
            let existing =
                new
                ? nil
                : try await Spinner.run("looking for your pin…") { try await client.ownPin() }
            if let existing {
                let question = "You already have a pin at \(existing.mapString) (\(PinTable.age(of: existing.updatedAt.date))). Overwrite it?"
                guard try Prompts.confirm(question, defaultAnswer: true, yes: yes) else {
                    throw CommandFailure("nothing posted (use --new to add another pin)", .cancelled)
                }
                let answer = try await Spinner.run("moving your pin…") { try await client.update(existing.objectId, pin) }
                report("moved your pin\(GlobalOptions.onMap(client)) to \(chosen.displayName)")
                Terminal.standardOutput(answer.objectId.rawValue)
            } else {
                let answer = try await Spinner.run("posting…") { try await client.post(pin, idempotencyKey: UUID().uuidString) }
                report("posted your pin\(GlobalOptions.onMap(client)) at \(chosen.displayName)")
                Terminal.standardOutput(answer.objectId.rawValue)
            }
        }
    }

    /// The best candidate with `--yes`; otherwise the person picks on the terminal (Enter takes the best).
    private func choose(from candidates: [GeocodeCandidate]) throws -> GeocodeCandidate {
        let best = candidates[0]
        let describe = { (candidate: GeocodeCandidate) in
            "\(candidate.name), \([candidate.region, candidate.country].filter { !$0.isEmpty }.joined(separator: ", ")) (\(PinLine.coordinates(candidate.latitude, candidate.longitude)))"
        }
        if yes {
            report("found \(describe(best))")
            return best
        }
        var lines = ["Found \(Terminal.style(describe(best), .bold, on: STDERR_FILENO))"]
        if candidates.count > 1 {
            lines.append("Other matches:")
            for (index, candidate) in candidates.enumerated().dropFirst() { lines.append("  \(index + 1). \(describe(candidate))") }
        }
        Terminal.standardError(lines.joined(separator: "\n"))
        let range = candidates.count > 1 ? "1-\(candidates.count), " : ""
        while true {
            let answer: String?
            do {
                answer = try Terminal.ask("Post here? [\(range)Enter for 1, n to cancel] ")
            } catch {
                throw CommandFailure("no terminal to confirm the place; pass --yes to take the best match", .usage)
            }
            guard let answer = answer?.trimmingCharacters(in: .whitespaces).lowercased(), !["n", "no", "q"].contains(answer) else {
                throw CommandFailure("nothing posted", .cancelled)
            }
            if answer.isEmpty || answer == "y" || answer == "yes" { return best }
            if let number = Int(answer), candidates.indices.contains(number - 1) { return candidates[number - 1] }
        }
    }

    private func report(_ text: String) {
        if Terminal.isTerminal(STDERR_FILENO) { Terminal.standardError(text) }
    }
}

/// Links as the server completes them: a bare domain (`udacity.com/path`) gets `https://` in front.
enum MediaLink {
    static func completed(_ text: String) -> String {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        let lower = trimmed.lowercased()
        return lower.hasPrefix("http://") || lower.hasPrefix("https://") ? trimmed : "https://" + trimmed
    }
}
