import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import OnTheMapShared
import ServiceLifecycle
import TestSupport
import Testing

@testable import AuthGateway
@testable import ServiceTwins

/// Signing in with an OpenID Connect provider: a real one (`Tests/oidc/provider.py`, django-oidc-provider)
/// on loopback, a browser that follows its redirects and fills in its login form, and the gateway.
@Suite struct OpenIDConnectSignInTests {
    static let alice = TestOpenIDProvider.User(
        username: "alice", password: "wonderland-9", givenName: "Alice", familyName: "Liddell", email: "alice@school.example",
        groups: ["teachers", "year-9"])
    static let bob = TestOpenIDProvider.User(
        username: "bob", password: "builder-77", givenName: "Bob", familyName: "Ross", email: "bob@school.example")

    static func settings(issuer: String) -> OIDCSettings {
        OIDCSettings(
            issuer: issuer, clientID: TestOpenIDProvider.clientID, clientSecret: TestOpenIDProvider.clientSecret,
            providerName: "Test University", publicURL: SignInGateway.publicURL)
    }

    static func withSignIn(
        configure: @Sendable (inout GatewayConfiguration) -> Void = { _ in },
        _ body: @escaping @Sendable (any TestClientProtocol, TestOpenIDProvider) async throws -> Void
    ) async throws {
        try await TestOpenIDProvider.with(users: [alice, bob], redirectURI: SignInGateway.callback) { provider in
            try await withGateway(configure: {
                $0.oidc = settings(issuer: provider.issuer)
                $0.upstreamTimeout = .seconds(3)
                configure(&$0)
            }) { client, _ in try await body(client, provider) }
        }
    }

    static func sessionCookie(_ browser: SignInBrowser) -> HTTPField? {
        browser.cookie(SessionCookies.session).map { HTTPField(name: .cookie, value: "\(SessionCookies.session)=\($0)") }
    }

    @Test(Needs.django) func aStudentSignsInWithTheProviderPostsAPinAndLogsOut() async throws {
        try await Self.withSignIn { client, _ in
            let browser = SignInBrowser(gateway: client)
            let end = try await browser.signIn(username: "alice", password: "wonderland-9")
            #expect(end.url == SignInGateway.publicURL + "/", "back on the map")
            #expect(end.reply.status == .ok)
            let callback = try #require(browser.callback)
            #expect(callback.status == .seeOther)
            #expect(callback.headers[values: .setCookie].contains { $0.hasPrefix("\(SessionCookies.session)=") && $0.contains("HttpOnly") })
            #expect(callback.headers[values: .setCookie].contains { $0.hasPrefix("XSRF-TOKEN=") })
            #expect(browser.cookie(SignInController.stateCookie) == nil, "the sign-in's cookie is cleared")
            let session = try #require(Self.sessionCookie(browser))

            let me = try await client.send(.get, "/v1/users/me", headers: [session])
            #expect(me.status == .ok)
            #expect(me.json["first_name"] as? String == "Alice")
            #expect(me.json["last_name"] as? String == "Liddell")
            #expect((me.json["email"] as? [String: Any])?["address"] as? String == "alice@school.example")
            let key = try #require(me.json["key"] as? String)
            #expect(!key.isEmpty && key.allSatisfy { $0.isNumber }, "a key shaped like Udacity's")

            let post = try await client.send(
                .post, "/v1/StudentLocation",
                body: #"{"mapString":"Oxford, England","mediaURL":"https://www.ox.ac.uk","latitude":51.75,"longitude":-1.25}"#,
                headers: [session])
            let id = try #require(post.json["objectId"] as? String)
            let pin = try await client.send(.get, "/v1/StudentLocation/\(id)")
            #expect(pin.json["uniqueKey"] as? String == key)
            #expect(pin.json["firstName"] as? String == "Alice")
            #expect(pin.json["lastName"] as? String == "Liddell")

            #expect(try await client.send(.delete, "/v1/session", headers: [session]).status == .ok)
            #expect(try await client.send(.get, "/v1/users/me", headers: [session]).status != .ok)
        }
    }

    @Test(Needs.django) func theFirstSignInCreatesTheAccountAndLaterOnesFindIt() async throws {
        try await Self.withSignIn { client, _ in
            var keys: [String] = []
            for (username, password) in [("alice", "wonderland-9"), ("alice", "wonderland-9"), ("bob", "builder-77")] {
                let browser = SignInBrowser(gateway: client)
                try await browser.signIn(username: username, password: password)
                let me = try await client.send(.get, "/v1/users/me", headers: [try #require(Self.sessionCookie(browser))])
                keys.append(try #require(me.json["key"] as? String))
            }
            #expect(keys[0] == keys[1], "the same person, the same account")
            #expect(keys[0] != keys[2])
        }
    }

    @Test(Needs.django) func anErasedStudentWhoSignsInAgainIsSomeoneNew() async throws {
        try await Self.withSignIn { client, _ in
            let browser = SignInBrowser(gateway: client)
            try await browser.signIn(username: "alice", password: "wonderland-9")
            let session = try #require(Self.sessionCookie(browser))
            let key = try #require(try await client.send(.get, "/v1/users/me", headers: [session]).json["key"] as? String)
            let erased = try await client.send(.delete, "/v1/accounts/me", headers: [session])
            #expect(erased.status == .ok)
            #expect(try await client.send(.get, "/v1/users/\(key)").status == .notFound)

            let again = SignInBrowser(gateway: client)
            try await again.signIn(username: "alice", password: "wonderland-9")
            let newSession = try #require(Self.sessionCookie(again))
            let me = try await client.send(.get, "/v1/users/me", headers: [newSession])
            #expect(me.json["first_name"] as? String == "Alice")
            #expect(me.json["key"] as? String != key, "nothing of the erased account is kept to find it by")
        }
    }

    /// `MAP_CREATORS=group:teachers`: the provider's groups claim decides, and whoever is outside the group
    /// is refused as anyone else `MAP_CREATORS` does not name.
    @Test(Needs.django) func aTeacherInTheCreatorsGroupCreatesAMapAndAStudentOutsideItIsRefused() async throws {
        try await Self.withSignIn(configure: { $0.mapCreators = try? MapCreators(setting: "group:teachers") }) { client, _ in
            let alice = SignInBrowser(gateway: client)
            try await alice.signIn(username: "alice", password: "wonderland-9")
            let created = try await client.send(
                .post, "/v1/maps", body: #"{"slug":"alice-class","name":"Alice's class"}"#, headers: [try #require(Self.sessionCookie(alice))])
            #expect(created.status == .created, "\(created.body)")
            #expect(created.json["role"] as? String == "owner")

            let bob = SignInBrowser(gateway: client)
            try await bob.signIn(username: "bob", password: "builder-77")
            let refused = try await client.send(
                .post, "/v1/maps", body: #"{"slug":"bob-class","name":"Bob's class"}"#, headers: [try #require(Self.sessionCookie(bob))])
            #expect(refused.status == .forbidden)
            #expect(refused.json["code"] as? Int == 119)
            let local = try await client.signedUpAndLoggedIn("carol@school.example")
            let localRefusal = try await client.send(.post, "/v1/maps", body: #"{"slug":"carol-class","name":"x"}"#, headers: [local.bearer])
            #expect(refused.body == localRefusal.body, "the same refusal as for any account MAP_CREATORS does not name")
            #expect(try await client.send(.get, "/v1/maps/bob-class").status == .notFound)
        }
    }

    /// More groups than are kept refuse the sign-in with the reason, rather than keeping some of them.
    @Test(Needs.django) func aStudentInMoreGroupsThanAreKeptIsToldWhyAndGetsNoSession() async throws {
        let crowded = TestOpenIDProvider.User(
            username: "dinah", password: "cheshire-31", givenName: "Dinah", familyName: "Cat", email: "dinah@school.example",
            groups: (0...OIDCGroups.maximumCount).map { "club-\($0)" })
        try await TestOpenIDProvider.with(users: [crowded], redirectURI: SignInGateway.callback) { provider in
            try await withGatewaySocket(configure: { $0.oidc = Self.settings(issuer: provider.issuer) }) { client, _ in
                let browser = SignInBrowser(gateway: client)
                let end = try await browser.signIn(username: "dinah", password: "cheshire-31")
                #expect(end.reply.status == .forbidden)
                #expect(end.reply.body.contains("names 101 groups, more than the 100 this server keeps"), "\(end.reply.body)")
                #expect(end.reply.body.contains("Ask this server"))
                #expect(browser.cookie(SessionCookies.session) == nil)
            }
        }
    }

    @Test(Needs.django) func aCallbackInAnotherBrowserIsRefusedAndOpensNoSession() async throws {
        try await Self.withSignIn { client, _ in
            // Someone lures another browser to the return address of a sign-in they started: it would log that
            // browser in to their account.
            let attacker = SignInBrowser(gateway: client)
            attacker.holdsCallback = true
            let held = try await attacker.signIn(username: "bob", password: "builder-77")
            #expect(held.url.contains("code=") && held.url.contains("state="))

            let victim = SignInBrowser(gateway: client)
            let refused = try await victim.go(to: held.url)
            #expect(refused.reply.status == .badRequest)
            #expect(refused.reply.headers[.contentType] == "text/html; charset=utf-8")
            #expect(refused.reply.body.contains("This sign-in was not started in this browser"))
            #expect(victim.cookie(SessionCookies.session) == nil)

            // The browser that started it can still finish it.
            attacker.holdsCallback = false
            try await attacker.go(to: held.url)
            #expect(attacker.callback?.status == .seeOther)
            #expect(attacker.cookie(SessionCookies.session) != nil)
        }
    }

    @Test(Needs.django) func aReturnAddressUsedTwiceIsRefused() async throws {
        try await Self.withSignIn { client, _ in
            let browser = SignInBrowser(gateway: client)
            browser.holdsCallback = true
            let held = try await browser.signIn(username: "alice", password: "wonderland-9")
            let state = try #require(browser.cookie(SignInController.stateCookie))
            browser.holdsCallback = false
            try await browser.go(to: held.url)
            #expect(browser.callback?.status == .seeOther)

            let replayer = SignInBrowser(gateway: client)
            replayer.setCookie(SignInController.stateCookie, state)
            let again = try await replayer.go(to: held.url)
            #expect(again.reply.status == .badRequest)
            #expect(again.reply.body.contains("This sign-in has expired or was finished already"))
            #expect(replayer.cookie(SessionCookies.session) == nil)
        }
    }

    @Test(Needs.django) func aCodeUsedOnceIsRefusedByTheProviderWhenShownAgain() async throws {
        try await Self.withSignIn { client, _ in
            let browser = SignInBrowser(gateway: client)
            browser.holdsCallback = true
            let first = try await browser.signIn(username: "alice", password: "wonderland-9")
            browser.holdsCallback = false
            try await browser.go(to: first.url)
            let signedIn = try #require(browser.cookie(SessionCookies.session))

            // A second sign-in, its code swapped for the first one's.
            browser.holdsCallback = true
            let second = try await browser.go(to: SignInGateway.publicURL + "/v1/auth/oidc/login")
            let usedCode = try #require(URLComponents(string: first.url)?.queryItems?.first { $0.name == "code" }?.value)
            var swapped = try #require(URLComponents(string: second.url))
            swapped.queryItems = swapped.queryItems?.map { $0.name == "code" ? URLQueryItem(name: "code", value: usedCode) : $0 }
            let refused = try await browser.go(to: try #require(swapped.string))
            #expect(refused.reply.status == .forbidden)
            #expect(refused.reply.body.contains("did not accept the sign-in&#39;s code"))
            #expect(browser.cookie(SessionCookies.session) == signedIn, "no new session")
        }
    }

    @Test(Needs.django) func aStudentWhoSaysNoAtTheProviderIsToldSo() async throws {
        try await Self.withSignIn { client, _ in
            let browser = SignInBrowser(gateway: client)
            browser.holdsCallback = true
            let held = try await browser.signIn(username: "alice", password: "wonderland-9")
            let state = try #require(URLComponents(string: held.url)?.queryItems?.first { $0.name == "state" }?.value)
            let denied = try await browser.go(
                to: SignInGateway.publicURL + "/v1/auth/oidc/callback?error=access_denied&error_description=The+user+denied&state=\(state)")
            #expect(denied.reply.status == .forbidden)
            #expect(denied.reply.body.contains("it answered access_denied (The user denied)"))
            #expect(browser.cookie(SessionCookies.session) == nil)
        }
    }

    @Test(Needs.django) func signInsGoOnWhenTheProviderRotatesItsKeys() async throws {
        try await Self.withSignIn { client, provider in
            let before = SignInBrowser(gateway: client)
            try await before.signIn(username: "alice", password: "wonderland-9")
            #expect(before.cookie(SessionCookies.session) != nil)
            let newKey = try await provider.rotateKeys()
            #expect(!newKey.isEmpty)
            let after = SignInBrowser(gateway: client)
            try await after.signIn(username: "bob", password: "builder-77")
            #expect(after.callback?.status == .seeOther)
            #expect(after.cookie(SessionCookies.session) != nil)
            let session = try #require(Self.sessionCookie(after))
            #expect(try await client.send(.get, "/v1/users/me", headers: [session]).json["first_name"] as? String == "Bob")
        }
    }

    @Test(Needs.django) func aProviderThatFailsMidwayIs502AndOpensNoSession() async throws {
        try await Self.withSignIn { client, provider in
            let browser = SignInBrowser(gateway: client)
            browser.holdsCallback = true
            let held = try await browser.signIn(username: "alice", password: "wonderland-9")
            provider.stop()
            let refused = try await browser.go(to: held.url)
            #expect(refused.reply.status == .badGateway)
            #expect(refused.reply.body.contains("The identity provider could not be reached"))
            #expect(browser.cookie(SessionCookies.session) == nil)
        }
    }

    @Test func anUnreachableIssuerIs502AndASilentOneIs504() async throws {
        // Nothing listens on loopback's discard port.
        try await withGatewaySocket(configure: { $0.oidc = Self.settings(issuer: "http://127.0.0.1:9/openid") }) { client, _ in
            let reply = try await client.send(.get, "/v1/auth/oidc/login")
            #expect(reply.status == .badGateway)
            #expect(reply.body.contains("The identity provider could not be reached"))
        }
        let silent = Router()
        silent.get("openid/.well-known/openid-configuration") { _, _ -> Response in
            try await gracefulShutdown()
            return Response(status: .ok)
        }
        try await Application(router: silent, configuration: .init(address: .hostname("127.0.0.1", port: 0))).withLoopbackServer { port in
            try await withGatewaySocket(configure: {
                $0.oidc = Self.settings(issuer: "http://127.0.0.1:\(port)/openid")
                $0.upstreamTimeout = .seconds(2)
            }) { client, _ in
                let started = ContinuousClock.now
                let reply = try await client.send(.get, "/v1/auth/oidc/login")
                #expect(reply.status == .gatewayTimeout)
                #expect(reply.body.contains("did not answer in time"))
                #expect(ContinuousClock.now - started < .seconds(5))
            }
        }
    }

    @Test(Needs.django) func theCommandLineGetsItsSessionForTheCodeAndTheVerifierOfItsChallenge() async throws {
        try await Self.withSignIn { client, _ in
            let verifier = OIDCSignIn.secret()
            let challenge = OIDCSignIn.challenge(of: verifier)
            let redirect = "http://127.0.0.1:45678/cli/callback"
            let browser = SignInBrowser(gateway: client)
            let end = try await browser.signIn(
                username: "bob", password: "builder-77",
                from: "/v1/auth/oidc/login?" + PercentEncoding.query([("cli_redirect", redirect), ("cli_challenge", challenge)]))
            #expect(end.url.hasPrefix(redirect + "?code="), "the browser is sent back to the command")
            #expect(browser.cookie(SessionCookies.session) == nil, "the browser gets no session of its own")
            let code = try #require(URLComponents(string: end.url)?.queryItems?.first { $0.name == "code" }?.value)

            let wrong = try await client.send(
                .post, "/v1/auth/oidc/token", body: #"{"code":"\#(code)","code_verifier":"\#(OIDCSignIn.secret())"}"#)
            #expect(wrong.status == .forbidden)
            #expect(wrong.body.hasPrefix(")]}'\n"))

            // A wrong verifier used the code up: the command signs in again.
            let again = SignInBrowser(gateway: client)
            let second = try await again.go(
                to: SignInGateway.publicURL + "/v1/auth/oidc/login?"
                    + PercentEncoding.query([("cli_redirect", redirect), ("cli_challenge", challenge)]))
            let secondEnd = try await again.logIn(at: second, username: "bob", password: "builder-77")
            let secondCode = try #require(URLComponents(string: secondEnd.url)?.queryItems?.first { $0.name == "code" }?.value)
            let body = #"{"code":"\#(secondCode)","code_verifier":"\#(verifier)"}"#
            let session = try await client.send(.post, "/v1/auth/oidc/token", body: body)
            #expect(session.status == .ok)
            #expect((session.json["account"] as? [String: Any])?["registered"] as? Bool == true)
            let token = try #require((session.json["session"] as? [String: Any])?["id"] as? String)
            let me = try await client.send(.get, "/v1/users/me", headers: [HTTPField(name: .authorization, value: "Bearer \(token)")])
            #expect(me.json["first_name"] as? String == "Bob")
            #expect(try await client.send(.post, "/v1/auth/oidc/token", body: body).status == .forbidden, "a code works once")
        }
    }

    @Test(Needs.django) func aCommandLineReturnAddressOffLoopbackIsRefused() async throws {
        try await Self.withSignIn { client, _ in
            let challenge = OIDCSignIn.challenge(of: OIDCSignIn.secret())
            for redirect in ["https://evil.example/cli", "http://192.0.2.1:8000/cb", "http://127.0.0.1/no-port", "javascript:alert(1)"] {
                let reply = try await client.send(
                    .get, "/v1/auth/oidc/login?" + PercentEncoding.query([("cli_redirect", redirect), ("cli_challenge", challenge)]))
                #expect(reply.status == .badRequest, "\(redirect)")
                #expect(reply.headers[.location] == nil)
            }
            let short = try await client.send(
                .get, "/v1/auth/oidc/login?" + PercentEncoding.query([("cli_redirect", "http://127.0.0.1:4000/cb"), ("cli_challenge", "abc")]))
            #expect(short.status == .badRequest)
        }
    }

    @Test func withoutAProviderTheSignInRoutesSaySo() async throws {
        try await withGatewayRouter { client, _ in
            let reply = try await client.send(.get, "/v1/auth/oidc/login")
            #expect(reply.status == .notFound)
            #expect(reply.body.contains("This server offers no sign-in with an identity provider"))
            let token = try await client.send(.post, "/v1/auth/oidc/token", body: #"{"code":"c","code_verifier":"v"}"#)
            #expect(token.status == .notFound)
            #expect(token.body.hasPrefix(")]}'\n{\"status\":404,"))
            #expect(try await client.send(.delete, "/v1/auth/oidc/login").status == .methodNotAllowed)
        }
    }

    @Test func theProviderIsConfiguredAndEachMistakeIsOneClearLineAtStartUp() throws {
        let base = [
            "DATABASE_URL": "postgres://u@127.0.0.1:5432/d", "LOCATIONS_URL": "http://127.0.0.1:8081", "INTERNAL_TOKEN": TestDatabase.internalToken,
        ]
        #expect(try GatewayConfiguration.fromEnvironment(base).oidc == nil)
        let full = base.merging([
            "OIDC_ISSUER": "https://id.school.example/realms/students", "OIDC_CLIENT_ID": "on-the-map", "OIDC_CLIENT_SECRET": "s3cret",
            "PUBLIC_URL": "https://map.school.example/",
        ]) { $1 }
        let settings = try #require(try GatewayConfiguration.fromEnvironment(full).oidc)
        #expect(settings.redirectURI == "https://map.school.example/v1/auth/oidc/callback")
        #expect(settings.discoveryURL == "https://id.school.example/realms/students/.well-known/openid-configuration")
        #expect(settings.providerName == "id.school.example")
        #expect(try GatewayConfiguration.fromEnvironment(full.merging(["OIDC_PROVIDER_NAME": "Keycloak"]) { $1 }).oidc?.providerName == "Keycloak")

        for (change, message) in [
            (["PUBLIC_URL": ""], "PUBLIC_URL is not set"),
            (["OIDC_CLIENT_SECRET": ""], "OIDC_CLIENT_SECRET is not set"),
            (["OIDC_ISSUER": "http://id.school.example"], "OIDC_ISSUER must be the issuer's https URL"),
            (["PUBLIC_URL": "map.school.example"], "PUBLIC_URL must be the http(s) address"),
        ] {
            do {
                _ = try GatewayConfiguration.fromEnvironment(full.merging(change) { $1 })
                Issue.record("\(change) was taken")
            } catch {
                #expect("\(error)".contains(message), "\(error)")
            }
        }
    }
}
