import Foundation
import NIOHTTP1

/// Each HTTP exchange as a few lines of text for `--verbose`, with secrets blanked: the password sent, the
/// session id in `Authorization`, and, on the session routes, the ids and cookies handed out.
enum ExchangeLog {
    static let redacted = "<redacted>"

    static func describe(_ request: OnTheMapClient.Request, hiding secrets: [String]) -> String {
        var lines = ["> \(request.method.rawValue) \(request.url)"]
        for (name, value) in request.headers {
            lines.append("> \(name): \(name.lowercased() == "authorization" ? "Bearer \(redacted)" : value)")
        }
        if let body = request.body { lines.append("> " + hide(secrets, in: String(decoding: body, as: UTF8.self))) }
        return lines.joined(separator: "\n")
    }

    static func describe(_ answer: OnTheMapClient.Answer, after elapsed: Duration, hiding secrets: [String], redactIDs: Bool) -> String {
        let milliseconds = elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000
        var lines = ["< \(answer.status) (\(milliseconds) ms)"]
        for (name, value) in answer.headers {
            lines.append("< \(name): \(name.lowercased() == "set-cookie" ? cookieName(value) + "=" + redacted : value)")
        }
        var text = hide(secrets, in: String(decoding: answer.body.prefix(4096), as: UTF8.self))
        if redactIDs { text = hideIDs(text) }
        if !text.isEmpty { lines.append("< " + text + (answer.body.count > 4096 ? " …(\(answer.body.count) bytes)" : "")) }
        return lines.joined(separator: "\n")
    }

    static func hide(_ secrets: [String], in text: String) -> String {
        secrets.filter { !$0.isEmpty }.reduce(text) { $0.replacingOccurrences(of: $1, with: redacted) }
    }

    /// Blanks the value of every `"id"` key: the session id in a login or logout answer.
    static func hideIDs(_ text: String) -> String {
        text.replacingOccurrences(of: #""id"\s*:\s*"[^"]*""#, with: "\"id\":\"\(redacted)\"", options: .regularExpression)
    }

    private static func cookieName(_ header: String) -> String {
        String(header.prefix { $0 != "=" })
    }
}
