import Foundation
import TestSupport
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A seed-era app that logs in with Facebook, driven as the apps drive the API: Foundation's URLSession,
/// which keeps the cookies it is given, and the requests of Udacity's published samples that the apps copied
/// (the `facebook_mobile` body, the first 5 bytes skipped, `X-XSRF-TOKEN` read from the cookie store to log
/// out), against the real services, with Facebook's Graph API played by `FakeFacebookGraph`.
@Suite struct FacebookAppFlowTests {
    /// What the apps decode.
    struct SessionAnswer: Decodable {
        struct Account: Decodable {
            let registered: Bool
            let key: String
        }
        struct Session: Decodable {
            let id: String
            let expiration: String
        }
        let account: Account
        let session: Session
    }

    struct UserAnswer: Decodable {
        enum CodingKeys: String, CodingKey {
            case firstName = "first_name"
            case lastName = "last_name"
        }
        let firstName: String
        let lastName: String
    }

    struct StudentLocation: Decodable {
        let objectId: String
        let uniqueKey: String
        let firstName: String
        let lastName: String
        let mapString: String
        let mediaURL: String
        let latitude: Double
        let longitude: Double
        let createdAt: String
        let updatedAt: String
    }

    struct StudentLocations: Decodable { let results: [StudentLocation] }

    struct PostedLocation: Decodable {
        let createdAt: String
        let objectId: String
    }

    struct LogoutAnswer: Decodable { let session: SessionAnswer.Session }

    /// The app's networking: one session that keeps its cookies, as `URLSession.shared` does on a phone (a
    /// store of its own here, so no other test's cookies for 127.0.0.1 join in).
    struct SeedApp {
        let base: String
        let session = URLSession(configuration: .ephemeral)

        /// The answer's status and body; the session and users routes' bodies without their first 5 bytes.
        func send(_ method: String, _ path: String, json: String? = nil, skipPrefix: Bool) async throws -> (status: Int, body: Data) {
            var request = URLRequest(url: URL(string: base + path)!)
            request.httpMethod = method
            if let json {
                request.addValue("application/json", forHTTPHeaderField: "Accept")
                request.addValue("application/json", forHTTPHeaderField: "Content-Type")
                request.httpBody = json.data(using: .utf8)
            }
            if method == "DELETE", path == "/session" {
                var xsrfCookie: HTTPCookie?
                for cookie in session.configuration.httpCookieStorage?.cookies ?? [] where cookie.name == "XSRF-TOKEN" { xsrfCookie = cookie }
                if let xsrfCookie { request.setValue(xsrfCookie.value, forHTTPHeaderField: "X-XSRF-TOKEN") }
            }
            let (data, response) = try await session.data(for: request)
            let status = (response as? HTTPURLResponse)?.statusCode ?? 0
            return (status, skipPrefix ? data.subdata(in: 5..<data.count) : data)
        }
    }

    @Test func anAppLogsInWithFacebookReadsItsUserAndTheListPostsAPinAndLogsOut() async throws {
        try await FakeFacebookGraph.withServer { graph in
            let settings = [
                "FACEBOOK_APP_ID": FakeFacebookGraph.appID, "FACEBOOK_APP_SECRET": FakeFacebookGraph.appSecret, "FACEBOOK_GRAPH_URL": graph,
                "LOG_LEVEL": "trace",
            ]
            try await withSystem(gatewaySettings: settings) { gateway, _ in
                let app = SeedApp(base: "http://127.0.0.1:\(gateway.port)/v1")
                let decoder = JSONDecoder()

                let login = try await app.send(
                    "POST", "/session", json: "{\"facebook_mobile\": {\"access_token\": \"\(FakeFacebookGraph.Token.grace)\"}}", skipPrefix: true)
                #expect(login.status == 200)
                let session = try decoder.decode(SessionAnswer.self, from: login.body)
                #expect(session.account.registered)
                #expect(app.session.configuration.httpCookieStorage?.cookies?.contains { $0.name == "XSRF-TOKEN" } == true)

                let user = try await app.send("GET", "/users/\(session.account.key)", skipPrefix: true)
                let names = try decoder.decode(UserAnswer.self, from: user.body)
                #expect((names.firstName, names.lastName) == ("Grace", "Hopper"))

                let before = try await app.send("GET", "/StudentLocation?limit=100&order=-updatedAt", skipPrefix: false)
                #expect(try decoder.decode(StudentLocations.self, from: before.body).results.isEmpty)

                // No Authorization header: the session cookie the login set is what the app sends back.
                let post = try await app.send(
                    "POST", "/StudentLocation",
                    json: """
                        {"uniqueKey": "1234", "firstName": "John", "lastName": "Doe","mapString": "Mountain View, CA", "mediaURL": "https://udacity.com","latitude": 37.386052, "longitude": -122.083851}
                        """, skipPrefix: false)
                #expect(post.status == 200)
                let posted = try decoder.decode(PostedLocation.self, from: post.body)

                let after = try await app.send("GET", "/StudentLocation?limit=100&order=-updatedAt", skipPrefix: false)
                let pin = try #require(try decoder.decode(StudentLocations.self, from: after.body).results.first)
                #expect(pin.objectId == posted.objectId)
                #expect(pin.uniqueKey == session.account.key)
                #expect((pin.firstName, pin.lastName) == ("Grace", "Hopper"))

                let logout = try await app.send("DELETE", "/session", skipPrefix: true)
                #expect(logout.status == 200)
                #expect(try decoder.decode(LogoutAnswer.self, from: logout.body).session.id == session.session.id)
                let afterwards = try await app.send(
                    "POST", "/StudentLocation", json: #"{"mapString":"x","mediaURL":"https://a.example","latitude":1,"longitude":1}"#,
                    skipPrefix: false)
                #expect(afterwards.status == 401, "logged out")

                #expect(gateway.output.contains("logged in with Facebook"), "the gateway logged at trace level")
                for (what, secret) in [("the Facebook token", FakeFacebookGraph.Token.grace), ("the app's secret", FakeFacebookGraph.appSecret)] {
                    #expect(!gateway.output.contains(secret), "the gateway logged \(what)")
                }
            }
        }
    }
}
