import Foundation
import TestSupport
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Nothing secret reaches a log, even at the most talkative level: a password (right or mistyped), a session
/// id, in a header or a cookie, an XSRF token, the internal token.
@Suite struct SecretsInLogsTests {
    @Test(arguments: ["text", "json"]) func noPasswordSessionIdCookieOrTokenIsLoggedAtTraceLevel(format: String) async throws {
        let talkative = ["LOG_LEVEL": "trace", "LOG_FORMAT": format]
        try await withSystem(gatewaySettings: talkative, locationsSettings: talkative) { gateway, locations in
            let client = CookielessClient(port: gateway.port)
            let password = "correct horse battery"
            let typo = "correct horse batery"
            let account = #"{"email":"ada@example.com","password":"\#(password)","firstName":"Ada","lastName":"Lovelace"}"#
            #expect(try await client.send("POST", "/v1/accounts", body: account).status == 201)
            let wrong = #"{"udacity":{"username":"ada@example.com","password":"\#(typo)"}}"#
            #expect(try await client.send("POST", "/v1/session", body: wrong).status == 403)
            let login = try await client.send(
                "POST", "/v1/session", body: #"{"udacity":{"username":"ada@example.com","password":"\#(password)"}}"#)
            #expect(login.status == 200)
            let answer = try JSONSerialization.jsonObject(with: Data(login.body.dropFirst(login.body.hasPrefix(")]}'") ? 5 : 0).utf8))
            let session = try #require(((answer as? [String: Any])?["session"] as? [String: Any])?["id"] as? String)
            let xsrf = try #require(login.cookies["XSRF-TOKEN"])

            let pin = #"{"mapString":"Berlin","mediaURL":"https://example.com","latitude":52.5,"longitude":13.4}"#
            #expect(try await client.send("POST", "/v1/StudentLocation", body: pin, headers: ["Authorization": "Bearer \(session)"]).status == 200)
            // As the web page sends it: the session in its cookie, the XSRF token in a cookie and a header.
            let browser = [
                "Cookie": "onthemap_session=\(session); XSRF-TOKEN=\(xsrf)", "X-XSRF-TOKEN": xsrf, "Origin": "http://127.0.0.1:\(gateway.port)",
                "Sec-Fetch-Site": "same-origin",
            ]
            #expect(try await client.send("POST", "/v1/StudentLocation", body: pin, headers: browser).status == 200)
            #expect(try await client.send("GET", "/v1/users/me", headers: ["Authorization": "Bearer \(session)"]).status == 200)
            #expect(try await client.send("DELETE", "/v1/session", headers: browser).status == 200)
            #expect(try await locations.get("/v1/StudentLocation?limit=1").0 == 200)

            for (name, output) in [("auth-gateway", gateway.output), ("locations-service", locations.output)] where format == "json" {
                let lines = output.split(separator: "\n")
                let parsed = lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
                #expect(parsed.count == lines.count, "\(name): \(lines.count - parsed.count) of \(lines.count) lines are not a JSON object")
                let complete = parsed.filter { line in
                    line["service"] as? String == name && ["time", "level", "message", "source"].allSatisfy { line[$0] is String }
                }
                #expect(complete.count == parsed.count, "\(name): every line has its time, level, service, message and source")
                #expect(parsed.contains { $0["level"] as? String == "trace" }, "\(name) logged at trace level")
            }
            for (name, output) in [("auth-gateway", gateway.output), ("locations-service", locations.output)] {
                #expect(output.count > 10_000, "\(name) logged at trace level (\(output.count) bytes)")
                for (what, secret) in [
                    ("the password", password), ("a mistyped password", typo), ("the session id", session),
                    ("the XSRF token", xsrf), ("the internal token", TestDatabase.internalToken),
                ] {
                    #expect(!output.contains(secret), "\(name) logged \(what)")
                }
            }
        }
    }
}
