import Foundation
import HTTPTypes
import HummingbirdTesting
import OnTheMapShared
import TestSupport
import Testing

@testable import AuthGateway
@testable import ServiceTwins

/// The apps' Facebook logins (`facebook_mobile`) checked by the gateway itself against a stand-in for
/// Facebook's Graph API on loopback (`FakeFacebookGraph`), which speaks Graph's JSON.
@Suite struct FacebookLogInTests {
    static let prefix = ")]}'\n"
    static let refused = prefix + #"{"status":403,"error":"Account not found or invalid credentials."}"#

    static func settings(graph: String, secret: String = FakeFacebookGraph.appSecret) -> FacebookSettings {
        FacebookSettings(appID: FakeFacebookGraph.appID, appSecret: secret, graphURL: graph)
    }

    /// The gateway's router with the fake's app configured (or `graphURL` in its place), over `stores`.
    static func withFacebook(
        over stores: GatewayStoresKind = .memory, graphURL: String? = nil, secret: String = FakeFacebookGraph.appSecret,
        _ body: @escaping @Sendable (any TestClientProtocol) async throws -> Void
    ) async throws {
        try await FakeFacebookGraph.withServer { url in
            try await withGatewayRouter(
                over: stores,
                configure: {
                    $0.facebook = settings(graph: graphURL ?? url, secret: secret)
                    $0.upstreamTimeout = .seconds(2)
                }
            ) { client, _ in try await body(client) }
        }
    }

    static func logIn(_ client: any TestClientProtocol, _ token: String) async throws -> Reply {
        try await client.send(.post, "/v1/session", body: #"{"facebook_mobile":{"access_token":"\#(token)"}}"#)
    }

    /// The account key and session id of a login that succeeded.
    static func session(of reply: Reply) throws -> (key: String, bearer: HTTPField) {
        let key = try #require((reply.json["account"] as? [String: Any])?["key"] as? String)
        let id = try #require((reply.json["session"] as? [String: Any])?["id"] as? String)
        return (key, HTTPField(name: .authorization, value: "Bearer \(id)"))
    }

    @Test(arguments: GatewayStoresKind.allCases)
    func aGoodTokenLogsInAsAPasswordLoginDoesAndFindsTheSameAccountEachTime(_ stores: GatewayStoresKind) async throws {
        try await Self.withFacebook(over: stores) { client in
            let login = try await Self.logIn(client, FakeFacebookGraph.Token.grace)
            #expect(login.status == .ok)
            #expect(login.headers[.contentType] == "application/json")
            let pattern = try Regex(
                #"^\)\]\}'\n\{"account":\{"registered":true,"key":"\d{10}"\},"session":\{"id":"\d{10}S[0-9a-f]{64}","expiration":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z"\}\}$"#
            )
            #expect(login.body.wholeMatch(of: pattern) != nil, "\(login.body)")
            #expect(login.cookies["XSRF-TOKEN"]?.isEmpty == false)
            #expect(login.headers[values: .setCookie].contains { $0.hasPrefix("onthemap_session=") && $0.contains("HttpOnly") })
            let (key, bearer) = try Self.session(of: login)

            let user = try await client.send(.get, "/v1/users/\(key)", headers: [bearer])
            #expect(user.status == .ok)
            #expect(user.json["first_name"] as? String == "Grace")
            #expect(user.json["last_name"] as? String == "Hopper")
            #expect((user.json["email"] as? [String: Any])?["address"] as? String == "grace@facebook.example")

            let post = try await client.send(
                .post, "/v1/StudentLocation",
                body: #"{"uniqueKey":"1234","mapString":"Arlington, Virginia","mediaURL":"https://navy.mil","latitude":38.88,"longitude":-77.1}"#,
                headers: [bearer])
            let id = try #require(post.json["objectId"] as? String)
            let pin = try await client.send(.get, "/v1/StudentLocation/\(id)")
            #expect(pin.json["uniqueKey"] as? String == key)
            #expect(pin.json["firstName"] as? String == "Grace")

            let again = try await Self.logIn(client, FakeFacebookGraph.Token.grace)
            #expect(try Self.session(of: again).key == key, "the same Facebook user, the same account")
            let ada = try await Self.logIn(client, FakeFacebookGraph.Token.ada)
            let (adaKey, adaBearer) = try Self.session(of: ada)
            #expect(adaKey != key)
            let adaUser = try await client.send(.get, "/v1/users/me", headers: [adaBearer])
            #expect(adaUser.json["first_name"] as? String == "Ada")
            #expect((adaUser.json["email"] as? [String: Any])?["address"] as? String == "", "she did not share her address")
        }
    }

    @Test func aTokenIssuedToAnotherAppOrNoUserIsRefused() async throws {
        try await Self.withFacebook { client in
            for token in [FakeFacebookGraph.Token.otherApp, FakeFacebookGraph.Token.page] {
                let reply = try await Self.logIn(client, token)
                #expect(reply.status == .forbidden)
                #expect(reply.body == Self.refused)
                #expect(reply.headers[values: .setCookie].isEmpty, "no session, no cookies")
            }
        }
    }

    @Test func anExpiredTokenIsRefused() async throws {
        try await Self.withFacebook { client in
            // As Graph answers for it (not valid, 190/463), and a late answer that says valid past its end.
            for token in [FakeFacebookGraph.Token.expired, FakeFacebookGraph.Token.lapsed] {
                let reply = try await Self.logIn(client, token)
                #expect(reply.status == .forbidden, "\(token)")
                #expect(reply.body == Self.refused)
            }
        }
    }

    @Test func aTokenGraphRefusesIsRefused() async throws {
        try await Self.withFacebook { client in
            // One Graph cannot read (is_valid false), and one it vouched for and then refused at /me.
            for token in ["EAAForgedByHand0000", FakeFacebookGraph.Token.revoked] {
                let reply = try await Self.logIn(client, token)
                #expect(reply.status == .forbidden, "\(token)")
                #expect(reply.body == Self.refused)
            }
        }
        // Graph refusing the call itself (here the app's own token, made with a wrong secret): an error object.
        try await Self.withFacebook(secret: "0000000000000000000000000000dead") { client in
            let reply = try await Self.logIn(client, FakeFacebookGraph.Token.grace)
            #expect(reply.status == .forbidden)
            #expect(reply.body == Self.refused)
        }
    }

    @Test func aSilentGraphIs504WithinTheDeadline() async throws {
        try await Self.withFacebook { client in
            let started = ContinuousClock.now
            let reply = try await Self.logIn(client, FakeFacebookGraph.Token.slow)
            #expect(reply.status == .gatewayTimeout)
            #expect(reply.body == Self.prefix + #"{"status":504,"error":"The identity provider did not answer in time; try again shortly."}"#)
            // Given up at the 2 s deadline (the fake answers only when it stops), with room for a loaded machine.
            #expect(ContinuousClock.now - started < .seconds(5))
        }
    }

    @Test func anUnreachableGraphIs502() async throws {
        // Nothing listens on the discard port of loopback; a freed port could be given to another test's server.
        try await Self.withFacebook(graphURL: "http://127.0.0.1:9") { client in
            let reply = try await Self.logIn(client, FakeFacebookGraph.Token.grace)
            #expect(reply.status == .badGateway)
            #expect(reply.body == Self.prefix + #"{"status":502,"error":"The identity provider could not be reached; try again shortly."}"#)
            #expect(reply.headers[values: .setCookie].isEmpty)
        }
    }

    @Test func passwordLoginsAndSignUpsGoOnBesideFacebookOnes() async throws {
        try await Self.withFacebook { client in
            let student = try await client.signedUpAndLoggedIn("beside@example.com")
            #expect(student.key.count == 10)
            let facebook = try Self.session(of: try await Self.logIn(client, FakeFacebookGraph.Token.grace))
            #expect(facebook.key != student.key)
        }
    }

    @Test func withoutAFacebookAppTheLocalProviderSaysItTakesNone() async throws {
        try await withGatewayRouter { client, _ in
            let reply = try await Self.logIn(client, FakeFacebookGraph.Token.grace)
            #expect(reply.status == .forbidden)
            #expect(
                reply.body
                    == Self.prefix
                    + #"{"status":403,"error":"Facebook login is not available on this server; log in with your email and password."}"#)
        }
    }

    @Test func aDisabledFacebookAccountCannotLogInAndAnErasedOneComesBackAsSomeoneNew() async throws {
        try await FakeFacebookGraph.withServer { url in
            try await withGateway(configure: { $0.facebook = Self.settings(graph: url) }) { client, fixture in
                let (key, bearer) = try Self.session(of: try await Self.logIn(client, FakeFacebookGraph.Token.grace))
                let disabled = try await operatorAccounts(
                    ["disable", "grace@facebook.example", "--operator", "ops"], on: fixture.database)
                #expect(disabled.status == 0, "\(disabled.output)")
                let refused = try await Self.logIn(client, FakeFacebookGraph.Token.grace)
                #expect(refused.status == .forbidden)
                #expect(
                    refused.body == Self.prefix
                        + #"{"status":403,"error":"This account has been disabled; ask the people who run this server to enable it."}"#)
                let wrote = try await waitFor(within: .seconds(2)) {
                    try await client.send(.delete, "/v1/StudentLocation/none", headers: [bearer]).status == .unauthorized
                }
                #expect(wrote != nil, "the disabled account's session ended")

                #expect(try await operatorAccounts(["enable", "grace@facebook.example"], on: fixture.database).status == 0)
                let (back, backBearer) = try Self.session(of: try await Self.logIn(client, FakeFacebookGraph.Token.grace))
                #expect(back == key)
                #expect(try await client.send(.delete, "/v1/accounts/me", headers: [backBearer]).status == .ok)
                #expect(try await client.send(.get, "/v1/users/\(key)").status == .notFound)

                let (again, _) = try Self.session(of: try await Self.logIn(client, FakeFacebookGraph.Token.grace))
                #expect(again != key, "nothing of the erased account is kept to find it by")
            }
        }
    }

    @Test func debugTokenAnswersAreCheckedForValidityAppUserAndExpiry() throws {
        let now = Timestamp(millisecondsSince1970: 1_700_000_000_000)
        let app = FakeFacebookGraph.appID
        func facts(
            app factsApp: String? = app, type: String? = "USER", valid: Bool = true, expiresAt: Int64? = 1_700_000_600
        ) -> FacebookGraph.TokenFacts {
            FacebookGraph.TokenFacts(appID: factsApp, type: type, isValid: valid, expiresAt: expiresAt, userID: "10158812345678901")
        }
        #expect(try facts().userID(forApp: app, at: now) == "10158812345678901")
        #expect(try facts(expiresAt: 0).userID(forApp: app, at: now) == "10158812345678901", "0: a token that does not expire")
        #expect(throws: FacebookGraph.Refusal.notValid(code: nil, subcode: nil)) { try facts(valid: false).userID(forApp: app, at: now) }
        #expect(throws: FacebookGraph.Refusal.otherApp) { try facts(app: "1999999999999999").userID(forApp: app, at: now) }
        #expect(throws: FacebookGraph.Refusal.otherApp) { try facts(app: nil).userID(forApp: app, at: now) }
        #expect(throws: FacebookGraph.Refusal.notAUserToken) { try facts(type: "APP").userID(forApp: app, at: now) }
        #expect(throws: FacebookGraph.Refusal.expired) { try facts(expiresAt: 1_700_000_000).userID(forApp: app, at: now) }
    }

    @Test func theAppIsConfiguredWithBothIDAndSecretOrNeitherAndEachMistakeIsOneClearLine() throws {
        let base = [
            "DATABASE_URL": "postgres://u@127.0.0.1:5432/d", "LOCATIONS_URL": "http://127.0.0.1:8081", "INTERNAL_TOKEN": TestDatabase.internalToken,
        ]
        #expect(try GatewayConfiguration.fromEnvironment(base).facebook == nil)
        let full = base.merging(["FACEBOOK_APP_ID": FakeFacebookGraph.appID, "FACEBOOK_APP_SECRET": FakeFacebookGraph.appSecret]) { $1 }
        let settings = try #require(try GatewayConfiguration.fromEnvironment(full).facebook)
        #expect(settings.graphURL == "https://graph.facebook.com")
        #expect(settings.appID == FakeFacebookGraph.appID)
        let versioned = full.merging(["FACEBOOK_GRAPH_URL": "https://graph.facebook.com/v21.0/"]) { $1 }
        #expect(try GatewayConfiguration.fromEnvironment(versioned).facebook?.graphURL == "https://graph.facebook.com/v21.0")

        for (environment, message) in [
            (base.merging(["FACEBOOK_APP_ID": FakeFacebookGraph.appID]) { $1 }, "FACEBOOK_APP_SECRET is not set but FACEBOOK_APP_ID is"),
            (base.merging(["FACEBOOK_APP_SECRET": FakeFacebookGraph.appSecret]) { $1 }, "FACEBOOK_APP_ID is not set but FACEBOOK_APP_SECRET is"),
            (base.merging(["FACEBOOK_GRAPH_URL": "https://graph.facebook.com"]) { $1 }, "FACEBOOK_GRAPH_URL is set without FACEBOOK_APP_ID"),
            (full.merging(["FACEBOOK_APP_ID": "on-the-map"]) { $1 }, "FACEBOOK_APP_ID must be the app's numeric ID"),
            (full.merging(["FACEBOOK_GRAPH_URL": "http://graph.facebook.com"]) { $1 }, "FACEBOOK_GRAPH_URL must be Graph's https URL"),
        ] {
            do {
                _ = try GatewayConfiguration.fromEnvironment(environment)
                Issue.record("\(environment) was taken")
            } catch {
                #expect("\(error)".contains(message), "\(error)")
                #expect(!"\(error)".contains(FakeFacebookGraph.appSecret), "the secret is never repeated")
            }
        }
    }
}
