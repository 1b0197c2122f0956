import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import OnTheMapShared
import ServiceLifecycle
import Synchronization
import TestSupport
import Testing

@testable import AuthGateway

/// IDENTITY_PROVIDER=udacity against a fake Udacity API on loopback that speaks its wire format,
/// prefix included.
@Suite struct UdacityProviderTests {
    static let prefix = ")]}'\n"

    /// Udacity's v1 answers: a session for the one good password, 403 otherwise, two broken accounts, and
    /// one whose last name changes with every profile read ("Renamed 1", "Renamed 2"...).
    static func fakeUdacity() -> some ApplicationProtocol {
        let profileReads = ProfileReads()
        let router = Router()
        router.post("session") { request, _ -> Response in
            let body = try await request.body.collect(upTo: 4096)
            let json = try JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any]
            if let facebook = json?["facebook_mobile"] as? [String: String] {
                guard facebook["access_token"] == Self.facebookToken else {
                    return text(#"{"status":403,"error":"Account not found or invalid credentials."}"#, status: .forbidden)
                }
                return text(
                    #"{"account":{"registered":true,"key":"\#(Self.facebookKey)"},"session":{"id":"1457628510Sf48f2ad4cd3fb317fb8e028488694088","expiration":"2015-05-10T16:48:30.760460Z"}}"#
                )
            }
            let credentials = json?["udacity"] as? [String: String] ?? [:]
            switch credentials["username"] {
            case "slow@udacity.com":
                // Answers only once the server stops: later than any limit of ours.
                try await gracefulShutdown()
                return Response(status: .ok)
            case "broken@udacity.com":
                return Response(status: .internalServerError, body: .init(byteBuffer: ByteBuffer(string: "upstream exploded")))
            case "student@udacity.com" where credentials["password"] == "udacity-password":
                return text(
                    #"{"account":{"registered":true,"key":"3903878747"},"session":{"id":"1457628510Sc18f2ad4cd3fb317fb8e028488694088","expiration":"2015-05-10T16:48:30.760460Z"}}"#
                )
            case "renamed@udacity.com" where credentials["password"] == "udacity-password":
                return text(
                    #"{"account":{"registered":true,"key":"\#(Self.renamedKey)"},"session":{"id":"1457628510Sd28f2ad4cd3fb317fb8e028488694088","expiration":"2015-05-10T16:48:30.760460Z"}}"#
                )
            case "numbered@udacity.com" where credentials["password"] == "udacity-password":
                // An older answer: the key as a JSON number.
                return text(#"{"account":{"registered":true,"key":\#(Self.numberedKey)},"session":{"id":"1457628510Se3"}}"#)
            default:
                return text(#"{"status":403,"error":"Account not found or invalid credentials."}"#, status: .forbidden)
            }
        }
        router.get("users/:key") { _, context -> Response in
            let key = try context.parameters.require("key")
            let last = key == Self.renamedKey ? "Renamed \(profileReads.next())" : "Parkes"
            let user = #"{"first_name":"Jarrod","last_name":"\#(last)","key":"\#(key)","nickname":"Jarrod"}"#
            // An older answer too: the user wrapped in "user" alone.
            if key == String(Self.numberedKey) { return text(#"{"user":{"first_name":"Ada","last_name":7}}"#) }
            if key == Self.facebookKey {
                return text(
                    #"{"first_name":"Grace","last_name":"Hopper","key":"\#(key)","email":{"address":"grace@facebook.example","_verified":true}}"#)
            }
            return text(#"{"first_name":"Jarrod","last_name":"\#(last)","key":"\#(key)","user":\#(user)}"#)
        }
        return Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
    }

    static let renamedKey = "5550001111"
    static let facebookKey = "7700000001"
    /// What Facebook's SDK gave the app, and the app sent to Udacity.
    static let facebookToken = "EAAFdCVhZBAOwBAJZBZCE4MHfdZC9ZBsjZAq6ZAZBh8ZD"
    static let numberedKey = 4_000_000_001

    final class ProfileReads: Sendable {
        private let count = Mutex(0)
        func next() -> Int {
            count.withLock {
                $0 += 1
                return $0
            }
        }
    }

    static func text(_ json: String, status: HTTPResponse.Status = .ok) -> Response {
        Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: prefix + json)))
    }

    static func withUdacityGateway(baseURL: String? = nil, _ body: @escaping @Sendable (any TestClientProtocol) async throws -> Void) async throws {
        try await fakeUdacity().withLoopbackServer { port in
            let url = baseURL ?? "http://127.0.0.1:\(port)"
            try await withGateway(configure: {
                $0.identityProvider = .udacity
                $0.udacityBaseURL = url
                $0.upstreamTimeout = .seconds(3)
            }) { client, _ in try await body(client) }
        }
    }

    /// Logs in with the one good password: the account key and our session id in the answer.
    static func logIn(_ client: any TestClientProtocol, _ username: String) async throws -> (key: String?, token: String) {
        let login = try await client.send(
            .post, "/v1/session", body: #"{"udacity":{"username":"\#(username)","password":"udacity-password"}}"#)
        #expect(login.status == .ok)
        let token = try #require((login.json["session"] as? [String: Any])?["id"] as? String)
        return ((login.json["account"] as? [String: Any])?["key"] as? String, token)
    }

    @Test func aUdacityLoginOpensOurSessionWithTheirKeyAndNames() async throws {
        try await Self.withUdacityGateway { client in
            let (key, token) = try await Self.logIn(client, "student@udacity.com")
            #expect(key == "3903878747")
            #expect(token != "1457628510Sc18f2ad4cd3fb317fb8e028488694088", "the session is ours, not Udacity's")
            let bearer = HTTPField(name: .authorization, value: "Bearer \(token)")
            let post = try await client.send(
                .post, "/v1/StudentLocation",
                body: #"{"mapString":"Huntsville, Alabama","mediaURL":"https://udacity.com","latitude":34.73,"longitude":-86.58}"#,
                headers: [bearer])
            let id = try #require(post.json["objectId"] as? String)
            let pin = try await client.send(.get, "/v1/StudentLocation/\(id)")
            #expect(pin.json["uniqueKey"] as? String == "3903878747")
            #expect(pin.json["firstName"] as? String == "Jarrod")
            #expect(pin.json["lastName"] as? String == "Parkes")
            let profile = try await client.send(.get, "/v1/users/me", headers: [bearer])
            #expect(profile.json["last_name"] as? String == "Parkes")
        }
    }

    @Test func aFacebookLoginIsPassedToTheUpstreamAndOpensOurSession() async throws {
        try await Self.withUdacityGateway { client in
            // As the apps with a Facebook button sent it: pretty-printed, on the older path.
            let body = "{\n  \"facebook_mobile\" : {\n    \"access_token\" : \"\(Self.facebookToken)\"\n  }\n}"
            let login = try await client.send(.post, "/api/session", body: body)
            #expect(login.status == .ok)
            #expect(login.body.hasPrefix(Self.prefix))
            #expect((login.json["account"] as? [String: Any])?["key"] as? String == Self.facebookKey)
            #expect((login.json["account"] as? [String: Any])?["registered"] as? Bool == true)
            let token = try #require((login.json["session"] as? [String: Any])?["id"] as? String)
            #expect(token != "1457628510Sf48f2ad4cd3fb317fb8e028488694088", "the session is ours, not Udacity's")
            #expect(login.headers[values: .setCookie].contains { $0.hasPrefix("XSRF-TOKEN=") })

            let bearer = HTTPField(name: .authorization, value: "Bearer \(token)")
            let post = try await client.send(
                .post, "/v1/StudentLocation",
                body: #"{"mapString":"Arlington, Virginia","mediaURL":"https://navy.mil","latitude":38.88,"longitude":-77.1}"#,
                headers: [bearer])
            let id = try #require(post.json["objectId"] as? String)
            let pin = try await client.send(.get, "/v1/StudentLocation/\(id)")
            #expect(pin.json["uniqueKey"] as? String == Self.facebookKey)
            #expect(pin.json["firstName"] as? String == "Grace")
            #expect(pin.json["lastName"] as? String == "Hopper")
            let profile = try await client.send(.get, "/v1/users/me", headers: [bearer])
            #expect((profile.json["email"] as? [String: Any])?["address"] as? String == "grace@facebook.example")
        }
    }

    @Test func aFacebookTokenTheUpstreamRefusesIs403AndAMissingOneIs400() async throws {
        try await Self.withUdacityGateway { client in
            let wrong = try await client.send(.post, "/v1/session", body: #"{"facebook_mobile":{"access_token":"EAAExpired"}}"#)
            #expect(wrong.status == .forbidden)
            #expect(wrong.body == Self.prefix + #"{"status":403,"error":"Account not found or invalid credentials."}"#)
            #expect(!wrong.headers[values: .setCookie].contains { $0.hasPrefix("XSRF-TOKEN=") })

            let missing = try await client.send(.post, "/v1/session", body: #"{"facebook_mobile":{}}"#)
            #expect(missing.status == .badRequest)
            #expect(missing.json["parameter"] as? String == "facebook_mobile.access_token")
            let long = String(repeating: "E", count: 5000)
            let tooLong = try await client.send(.post, "/v1/session", body: #"{"facebook_mobile":{"access_token":"\#(long)"}}"#)
            #expect(tooLong.status == .badRequest)
        }
    }

    @Test func aKeyGivenAsANumberAndAUserWrappedAloneAreReadToo() async throws {
        try await Self.withUdacityGateway { client in
            let (key, token) = try await Self.logIn(client, "numbered@udacity.com")
            #expect(key == "4000000001")
            let profile = try await client.send(.get, "/v1/users/me", headers: [HTTPField(name: .authorization, value: "Bearer \(token)")])
            #expect(profile.json["first_name"] as? String == "Ada")
            #expect(profile.json["last_name"] as? String == "", "a name of another type counts as none")
        }
    }

    @Test func namesChangedAtUdacityReachTheWritesOfSessionsOpenedBefore() async throws {
        try await Self.withUdacityGateway { client in
            let login = #"{"udacity":{"username":"renamed@udacity.com","password":"udacity-password"}}"#
            let first = try await client.send(.post, "/v1/session", body: login)
            let token = try #require((first.json["session"] as? [String: Any])?["id"] as? String)
            let bearer = HTTPField(name: .authorization, value: "Bearer \(token)")
            let body = #"{"mapString":"Huntsville, Alabama","mediaURL":"https://udacity.com","latitude":34.73,"longitude":-86.58}"#
            let post = try await client.send(.post, "/v1/StudentLocation", body: body, headers: [bearer])
            let id = try #require(post.json["objectId"] as? String)
            #expect(try await client.send(.get, "/v1/StudentLocation/\(id)").json["lastName"] as? String == "Renamed 1")

            // Logging in again (from another device, say) reads the new name; the first session writes with it.
            #expect(try await client.send(.post, "/v1/session", body: login).status == .ok)
            #expect(try await client.send(.put, "/v1/StudentLocation/\(id)", body: body, headers: [bearer]).status == .ok)
            #expect(try await client.send(.get, "/v1/StudentLocation/\(id)").json["lastName"] as? String == "Renamed 2")
        }
    }

    @Test func wrongCredentialsAre403ButOutagesAre502AndSilenceIs504() async throws {
        try await Self.withUdacityGateway { client in
            let wrong = try await client.send(.post, "/v1/session", body: #"{"udacity":{"username":"student@udacity.com","password":"nope"}}"#)
            #expect(wrong.status == .forbidden)
            #expect(wrong.body == Self.prefix + #"{"status":403,"error":"Account not found or invalid credentials."}"#)

            let broken = try await client.send(.post, "/v1/session", body: #"{"udacity":{"username":"broken@udacity.com","password":"x"}}"#)
            #expect(broken.status == .badGateway)
            #expect(broken.body == Self.prefix + #"{"status":502,"error":"The identity provider could not be reached; try again shortly."}"#)

            let started = ContinuousClock.now
            let slow = try await client.send(.post, "/v1/session", body: #"{"udacity":{"username":"slow@udacity.com","password":"x"}}"#)
            #expect(slow.status == .gatewayTimeout)
            // Given up at the 3 s limit (the fake answers only when it stops): on a loaded machine the 504 has
            // come as late as 5.04 s.
            #expect(ContinuousClock.now - started < .seconds(6))

            let signUp = try await client.send(
                .post, "/v1/accounts", body: #"{"email":"a@b.example","password":"12345678","firstName":"A","lastName":"B"}"#)
            #expect(signUp.status == .forbidden)
        }
    }

    @Test func anUnreachableUdacityIs502() async throws {
        // Nothing listens on the discard port of loopback; a freed port could be given to another test's server.
        try await Self.withUdacityGateway(baseURL: "http://127.0.0.1:9") { client in
            let reply = try await client.send(
                .post, "/v1/session", body: #"{"udacity":{"username":"student@udacity.com","password":"udacity-password"}}"#)
            #expect(reply.status == .badGateway)
        }
    }
}
