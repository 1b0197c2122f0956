import Foundation
import TestSupport
import Testing

/// How a request is sent: the door it takes follows from its framing.
enum Framing: CaseIterable {
    case keepAlive, closing, http10, expectContinue

    /// `host` is the `Host` header, the address connected to when nil.
    func request(_ method: String, _ path: String, body: String, headers: [String], port: Int, host: String? = nil) -> String {
        var lines =
            [
                "\(method) \(path) \(self == .http10 ? "HTTP/1.0" : "HTTP/1.1")", "Host: \(host ?? "127.0.0.1:\(port)")",
                "Content-Type: application/json", "Content-Length: \(body.utf8.count)",
            ] + headers
        if self == .closing { lines.append("Connection: close") }
        if self == .expectContinue { lines.append("Expect: 100-continue") }
        return lines.joined(separator: "\r\n") + "\r\n\r\n" + body
    }
}

/// `headers` keeps the last of a repeated field; `setCookies` every `Set-Cookie`, in order.
typealias RawAnswer = (status: String, headers: [String: String], body: String, setCookies: [String])

/// Sends one request on a connection of its own (to 127.0.0.1, as sent to `host`); returns the status
/// line, the headers by lowercased name, the body and the cookies set. Its read waits on a thread of its own
/// (`RawConnection`'s asynchronous reads), and an interim `100 Continue` is read past.
func rawExchange(
    _ framing: Framing, _ method: String, _ path: String, body: String, headers: [String] = [], port: Int, host: String? = nil
) async throws -> RawAnswer {
    let connection = try RawConnection(port: port)
    let request = framing.request(method, path, body: body, headers: headers, port: port, host: host)
    if framing == .expectContinue, let end = request.range(of: "\r\n\r\n") {
        try connection.send(request[..<end.upperBound])
        try connection.send(request[end.upperBound...])
    } else {
        try connection.send(request)
    }
    let text = try await connection.receiveResponse()
    let (head, payload) = try #require(
        text.range(of: "\r\n\r\n").map { (text[..<$0.lowerBound], text[$0.upperBound...]) },
        "\(framing) \(method) \(path): \(text)")
    var lines = head.split(separator: "\r\n").map(String.init)
    let status = lines.removeFirst()
    var fields: [String: String] = [:]
    var setCookies: [String] = []
    for line in lines {
        guard let colon = line.firstIndex(of: ":") else { continue }
        let (name, value) = (line[..<colon].lowercased(), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        fields[name] = value
        if name == "set-cookie" { setCookies.append(value) }
    }
    return (status, fields, String(payload), setCookies)
}
