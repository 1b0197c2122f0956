import Foundation

/// What the commands ask a person, and the refusals when nobody is there to ask.
enum Prompts {
    /// A non-empty answer from the terminal.
    static func required(_ prompt: String) throws -> String {
        while true {
            let answer: String?
            do {
                answer = try Terminal.ask(prompt)?.trimmingCharacters(in: .whitespaces)
            } catch let failure as CommandFailure where failure.status == .usage {
                let name = prompt.trimmingCharacters(in: CharacterSet(charactersIn: ": ")).lowercased()
                throw CommandFailure("no terminal to ask for your \(name); give it as an option (see --help)", .usage)
            }
            guard let answer else { throw CommandFailure("cancelled", .cancelled) }
            if !answer.isEmpty { return answer }
        }
    }

    static func password(_ prompt: String) throws -> String {
        do {
            guard let password = try Terminal.askSecret(prompt), !password.isEmpty else { throw CommandFailure("cancelled", .cancelled) }
            return password
        } catch let failure as CommandFailure where failure.status == .usage {
            throw CommandFailure("no terminal to ask for the password; use --password-stdin", .usage)
        }
    }

    /// The first line of stdin, without its line end.
    static func passwordFromStandardInput() throws -> String {
        guard let line = Terminal.standardInputLine(), !line.isEmpty else {
            throw CommandFailure("--password-stdin: stdin held no password", .usage)
        }
        return line
    }

    /// For what cannot be undone: yes only when the person types `expected` (case aside) on the terminal;
    /// anything else, or the end of input, is no.
    static func typed(_ prompt: String, expecting expected: String) throws -> Bool {
        guard let answer = try Terminal.ask(prompt) else { return false }
        return answer.trimmingCharacters(in: .whitespaces).lowercased() == expected.lowercased()
    }

    /// Yes or no on the terminal; without one, `--yes` is the only way to say yes.
    static func confirm(_ question: String, defaultAnswer: Bool, yes: Bool) throws -> Bool {
        if yes { return true }
        guard let answer = try? Terminal.confirm(question, defaultAnswer: defaultAnswer) else {
            throw CommandFailure("no terminal to ask \"\(question)\"; pass --yes to go ahead", .usage)
        }
        return answer
    }
}
