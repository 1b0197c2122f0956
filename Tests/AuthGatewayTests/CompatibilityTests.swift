import Foundation
import HTTPTypes
import HummingbirdTesting
import OnTheMapShared
import TestSupport
import Testing

@testable import AuthGateway
@testable import ServiceTwins

/// The exact requests existing clients send, and the exact bytes they depend on.
@Suite struct CompatibilityTests {
    @Test func loginAnswersWithThePrefixRegisteredKeySessionAndMicrosecondExpiration() async throws {
        try await withGatewayRouter { client, _ in
            let student = try await client.signUp(Student("ios@example.com"))
            // Pretty-printed and without an Accept header, as the iOS clients send it (`\/` escapes: the next test).
            let reply = try await client.send(
                .post, "/v1/session",
                body: """
                    {
                      "udacity" : {
                        "username" : "ios@example.com",
                        "password" : "correct horse battery"
                      }
                    }
                    """)
            #expect(reply.status == .ok)
            #expect(reply.headers[.contentType] == "application/json")
            let pattern = try Regex(
                #"^\)\]\}'\n\{"account":\{"registered":true,"key":"\#(student.key)"\},"session":\{"id":"(\d{10}S[0-9a-f]{64})","expiration":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z"\}\}$"#
            )
            #expect(reply.body.wholeMatch(of: pattern) != nil, "\(reply.body)")
            #expect(reply.cookies["XSRF-TOKEN"]?.isEmpty == false)
            #expect(reply.headers[values: .setCookie].contains { $0.hasPrefix("onthemap_session=") && $0.contains("HttpOnly") })
        }
    }

    @Test func escapedSlashesInCredentialsAreUnderstood() async throws {
        try await withGatewayRouter { client, _ in
            var student = Student("slash@example.com")
            student.password = "a/b/c/d/e"
            _ = try await client.signUp(student)
            let reply = try await client.send(
                .post, "/v1/session", body: #"{"udacity": {"username": "slash@example.com", "password": "a\/b\/c\/d\/e"}}"#)
            #expect(reply.status == .ok)
        }
    }

    @Test func sessionErrorsArePrefixedInUdacitysShape() async throws {
        try await withGatewayRouter { client, _ in
            let cases: [(String, HTTPResponse.Status, String)] = [
                (
                    #"{"udacity":{"username":"nobody@example.com","password":"wrong"}}"#, .forbidden,
                    #"{"status":403,"error":"Account not found or invalid credentials."}"#
                ),
                (
                    #"{"udacity":{"password":"x"}}"#, .badRequest,
                    #"{"status":400,"parameter":"udacity.username","error":"trails.Error 400: Missing parameter 'username'"}"#
                ),
                (
                    #"{"udacity":{"username":"a@example.com"}}"#, .badRequest,
                    #"{"status":400,"parameter":"udacity.password","error":"trails.Error 400: Missing parameter 'password'"}"#
                ),
                // A username or password of another type, or a credential that is not an object, counts as none.
                (
                    #"{"udacity":{"username":42,"password":"x"}}"#, .badRequest,
                    #"{"status":400,"parameter":"udacity.username","error":"trails.Error 400: Missing parameter 'username'"}"#
                ),
                (
                    #"{"udacity":{"username":"a@example.com","password":null}}"#, .badRequest,
                    #"{"status":400,"parameter":"udacity.password","error":"trails.Error 400: Missing parameter 'password'"}"#
                ),
                (
                    #"{"udacity":null}"#, .badRequest,
                    #"{"status":400,"parameter":"udacity.username","error":"trails.Error 400: Missing parameter 'username'"}"#
                ),
                (#"{}"#, .badRequest, #"{"status":400,"error":"Did not specify exactly one credential."}"#),
                (#"["udacity"]"#, .badRequest, #"{"status":400,"error":"The request body must be a JSON object."}"#),
                (#"{"udacity":"#, .badRequest, #"{"status":400,"error":"The request body must be a JSON object."}"#),
                (
                    #"{"udacity":{"username":"a","password":"b"},"facebook_mobile":{"access_token":"t"}}"#, .badRequest,
                    #"{"status":400,"error":"Did not specify exactly one credential."}"#
                ),
            ]
            for (body, status, expected) in cases {
                let reply = try await client.send(.post, "/v1/session", body: body)
                #expect(reply.status == status, "\(body)")
                #expect(reply.body == ")]}'\n" + expected, "\(body)")
            }
            let facebook = try await client.send(.post, "/api/session", body: #"{"facebook_mobile":{"access_token":"EAAB"}}"#)
            #expect(facebook.status == .forbidden)
            #expect(facebook.body.hasPrefix(")]}'\n{\"status\":403,"))
        }
    }

    @Test func logoutNeedsNoXSRFTokenFromAppsButAMatchingOneFromBrowsers() async throws {
        try await withGatewayRouter { client, _ in
            let app = try await client.signedUpAndLoggedIn("app@example.com")
            let wrongToken = try await client.send(
                .delete, "/v1/session", headers: [app.bearer, HTTPField(name: .init("X-XSRF-TOKEN")!, value: "garbage")])
            #expect(wrongToken.status == .ok)
            #expect(wrongToken.body.hasPrefix(")]}'\n{\"session\":{\"id\":"))

            let browser = try await client.logIn(Student("app@example.com"))
            let origin = HTTPField(name: .init("Origin")!, value: "http://localhost")
            let refused = try await client.send(
                .delete, "/v1/session",
                headers: [
                    browser.bearer, origin, HTTPField(name: .cookie, value: "XSRF-TOKEN=abc"), HTTPField(name: .init("X-XSRF-TOKEN")!, value: "xyz"),
                ])
            #expect(refused.status == .forbidden)
            #expect(refused.body.hasPrefix(")]}'\n"))
            let accepted = try await client.send(
                .delete, "/v1/session",
                headers: [
                    browser.bearer, origin, HTTPField(name: .cookie, value: "XSRF-TOKEN=abc"), HTTPField(name: .init("X-XSRF-TOKEN")!, value: "abc"),
                ])
            #expect(accepted.status == .ok)
        }
    }

    @Test func theSessionCookieAloneAuthenticatesWrites() async throws {
        try await withGatewayRouter { client, _ in
            let student = try await client.signUp(Student("cookie@example.com"))
            let login = try await client.send(
                .post, "/v1/session", body: #"{"udacity":{"username":"cookie@example.com","password":"correct horse battery"}}"#)
            let cookie = try #require(login.cookies["onthemap_session"])
            let post = try await client.send(
                .post, "/v1/StudentLocation",
                body: #"{"mapString":"Berlin","mediaURL":"udacity.com","latitude":52.5,"longitude":13.4}"#,
                headers: [HTTPField(name: .cookie, value: "XSRF-TOKEN=\(login.cookies["XSRF-TOKEN"]!); onthemap_session=\(cookie)")])
            #expect(post.status == .ok, "\(post.body)")
            let pin = try await client.send(.get, "/v1/StudentLocation?uniqueKey=\(student.key)")
            #expect((pin.json["results"] as? [[String: Any]])?.first?["mediaURL"] as? String == "https://udacity.com")
        }
    }

    @Test func usersDocumentCarriesEveryStrictFieldAndAUserCopy() async throws {
        try await withGatewayRouter { client, _ in
            let student = try await client.signedUpAndLoggedIn("doc@example.com", firstName: "João", lastName: "Araújo")
            for path in ["/v1/users/\(student.key)", "/api/users/me", "/v1/users/\(student.token)"] {
                let reply = try await client.send(.get, path, headers: [student.bearer])
                #expect(reply.status == .ok, "\(path)")
                #expect(reply.body.hasPrefix(")]}'\n{\"first_name\":\"João\""), "\(path)")
                let document = reply.json
                let user = try #require(document["user"] as? [String: Any])
                for object in [document, user] {
                    for key in ["first_name", "last_name", "key", "nickname"] { #expect(object[key] is String, "\(key)") }
                    let email = try #require(object["email"] as? [String: Any])
                    #expect(email["address"] as? String == "doc@example.com")
                    #expect(email["_verified"] is Bool && email["_verification_code_sent"] is Bool)
                    for key in ["_registered", "_has_password", "employer_sharing"] { #expect(object[key] is Bool, "\(key)") }
                    for key in [
                        "social_accounts", "_cohort_keys", "_badges", "_principals", "_enrollments", "external_accounts",
                        "tags", "_affiliate_profiles", "_memberships",
                    ] { #expect(object[key] is [Any], "\(key)") }
                    #expect(object["key"] as? String == student.key)
                }
            }
            let stranger = try await client.send(.get, "/v1/users/\(student.key)")
            #expect((stranger.json["email"] as? [String: Any])?["address"] as? String == "", "an email is shown to its owner only")
            let missing = try await client.send(.get, "/v1/users/0000000000")
            #expect(missing.status == .notFound)
            #expect(missing.body == ")]}'\n{\"status\":404,\"error\":\"User not found.\"}")
        }
    }

    @Test func legacyParsePathsAnswer201OnPostAndAcceptParseHeaders() async throws {
        try await withGatewayRouter { client, _ in
            let student = try await client.signedUpAndLoggedIn("parse@example.com")
            let parseHeaders = [
                student.bearer, HTTPField(name: .init("X-Parse-Application-Id")!, value: "QrX47CA9cyuGewLdsL7o5Eb8iug6Em8ye0dnAbIr"),
                HTTPField(name: .init("X-Parse-REST-API-Key")!, value: "QuWThTdiRmTux3YaDseUSEpUKo7aBYM737yKd4gY"),
            ]
            for path in ["/parse/classes/StudentLocation", "/1/classes/StudentLocation"] {
                let created = try await client.send(
                    .post, path, body: #"{"mapString":"Lagos","mediaURL":"https://a.example","latitude":6.45,"longitude":3.39,"createdAt":""}"#,
                    headers: parseHeaders)
                #expect(created.status == .created, "\(path)")
                #expect(created.json["objectId"] is String && created.json["createAt"] is String)
                let listed = try await client.send(.get, path + "?where=%7B%22uniqueKey%22%3A%20%22\(student.key)%22%7D", headers: parseHeaders)
                #expect(listed.status == .ok)
                #expect(!listed.body.hasPrefix(")]}'"))
            }
            let v1 = try await client.send(
                .post, "/v1/StudentLocation", body: #"{"mapString":"Lagos","mediaURL":"https://a.example","latitude":6.45,"longitude":3.39}"#,
                headers: [student.bearer])
            #expect(v1.status == .ok)
            let all = try await client.send(.get, "/v1/StudentLocation?uniqueKey=\(student.key)&order=-updateAt")
            #expect((all.json["results"] as? [Any])?.count == 3)
        }
    }

    /// The apps find a student's pin by `uniqueKey` and PUT it; some post anew each time instead. Past the cap
    /// on pins per student (here 1, one pin each, as the apps show it), a post answers as always and takes the
    /// student's older pin off the map, so every app sees one pin per student either way.
    @Test func aStudentPostingAgainPastTheCapMovesTheirPinAndTheAppsStillGetTheirAnswers() async throws {
        try await withGatewayRouter(pinsPerStudent: 1) { client, _ in
            let student = try await client.signedUpAndLoggedIn("again@example.com")
            let first = try await client.postPin(as: student, mapString: "Lagos, Nigeria")
            let again = try await client.send(
                .post, "/parse/classes/StudentLocation",
                body: #"{"mapString":"Accra, Ghana","mediaURL":"https://a.example","latitude":5.6,"longitude":-0.19}"#, headers: [student.bearer])
            #expect(again.status == .created)
            let moved = try #require(again.json["objectId"] as? String)
            let mine = try await client.send(.get, "/parse/classes/StudentLocation?where=%7B%22uniqueKey%22%3A%22\(student.key)%22%7D")
            let results = try #require(mine.json["results"] as? [[String: Any]])
            #expect(results.count == 1)
            #expect(results.first?["objectId"] as? String == moved)
            #expect(results.first?["mapString"] as? String == "Accra, Ghana")
            #expect(try await client.send(.get, "/v1/StudentLocation/\(first)").status == .notFound)
        }
    }
}
