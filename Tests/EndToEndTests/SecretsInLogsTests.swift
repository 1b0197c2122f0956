import Foundation
import TestSupport
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Nothing secret reaches a log, even at the most talkative level: a password (right or mistyped), a session
/// id, in a header or a cookie, an XSRF token, the internal token.
@Suite struct SecretsInLogsTests {
    @Test func noPasswordSessionIdCookieOrTokenIsLoggedAtTraceLevel() async throws {
        let talkative = ["LOG_LEVEL": "trace"]
        try await withSystem(gatewaySettings: talkative, locationsSettings: talkative) { gateway, locations in
            let password = "correct horse battery"
            let typo = "correct horse batery"
            let account = #"{"email":"ada@example.com","password":"\#(password)","firstName":"Ada","lastName":"Lovelace"}"#
            #expect(try await gateway.request("POST", "/v1/accounts", body: account, token: false).0 == 201)
            let wrong = #"{"udacity":{"username":"ada@example.com","password":"\#(typo)"}}"#
            #expect(try await gateway.request("POST", "/v1/session", body: wrong, token: false).0 == 403)
            let login = #"{"udacity":{"username":"ada@example.com","password":"\#(password)"}}"#
            let (status, body) = try await gateway.request("POST", "/v1/session", body: login, token: false)
            #expect(status == 200)
            let answer = try JSONSerialization.jsonObject(with: Data(body.dropFirst(body.hasPrefix(")]}'") ? 5 : 0).utf8)) as? [String: Any]
            let session = try #require((answer?["session"] as? [String: Any])?["id"] as? String)

            let pin = #"{"mapString":"Berlin","mediaURL":"https://example.com","latitude":52.5,"longitude":13.4}"#
            #expect(
                try await gateway.request("POST", "/v1/StudentLocation", body: pin, headers: ["Authorization": "Bearer \(session)"], token: false).0
                    == 200)
            // As the web page sends it: the session in its cookie, the XSRF token in a cookie and a header (the
            // login set both cookies, which URLSession keeps and sends).
            let cookies = HTTPCookieStorage.shared.cookies(for: URL(string: "http://127.0.0.1:\(gateway.port)/")!) ?? []
            let xsrf = try #require(cookies.first { $0.name == "XSRF-TOKEN" }?.value)
            let browser = [
                "Cookie": "onthemap_session=\(session); XSRF-TOKEN=\(xsrf)", "X-XSRF-TOKEN": xsrf, "Origin": "http://127.0.0.1:\(gateway.port)",
                "Sec-Fetch-Site": "same-origin",
            ]
            #expect(try await gateway.request("POST", "/v1/StudentLocation", body: pin, headers: browser, token: false).0 == 200)
            #expect(try await gateway.request("GET", "/v1/users/me", headers: ["Authorization": "Bearer \(session)"], token: false).0 == 200)
            let loggedOut = try await gateway.request("DELETE", "/v1/session", headers: browser, token: false)
            #expect(loggedOut.0 == 200, "\(loggedOut.1)")
            #expect(try await locations.get("/v1/StudentLocation?limit=1").0 == 200)

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
