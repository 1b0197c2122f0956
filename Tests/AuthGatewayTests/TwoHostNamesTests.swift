import Foundation
import HTTPTypes
import HummingbirdTesting
import TestSupport
import Testing

@testable import AuthGateway
@testable import ServiceTwins

/// One gateway under two names, as apps written for Udacity and Parse see it: session and users on one name,
/// StudentLocation on the other (`SESSION_COOKIE_DOMAIN`). Requests go to 127.0.0.1 with the name in `Host`.
@Suite struct TwoHostNamesTests {
    static let udacity = "udacity.map.example.test"
    static let parse = "parse.map.example.test"
    static let login = #"{"udacity":{"username":"two@example.com","password":"correct horse battery"}}"#

    @Test func underTheCookieDomainALoginOnOneNameWritesOnTheOther() async throws {
        let domain = try CookieDomain(setting: "map.example.test")
        try await withGatewaySocket(configure: {
            $0.cookieDomain = domain
            $0.writeLimit.burst = 100
        }) { client, _ in
            let port = try #require(client.port)
            _ = try await client.signUp(Student("two@example.com"))
            // Keep-alive writes are answered before the router, the others by it.
            for framing in [Framing.keepAlive, .closing] {
                var jar = CookieJar()
                let login = try await rawExchange(framing, "POST", "/v1/session", body: Self.login, port: port, host: Self.udacity)
                #expect(login.status.hasSuffix(" 200 OK"), "\(framing): \(login.status) \(login.body)")
                for line in login.setCookies { jar.receive(line, from: Self.udacity) }
                let session = try #require(login.setCookies.last { $0.hasPrefix("onthemap_session=") }, "\(login.setCookies)")
                #expect(session.contains("; Domain=map.example.test"), "\(session)")
                #expect(login.setCookies.last { $0.hasPrefix("XSRF-TOKEN=") }?.contains("; Domain=map.example.test") == true)

                let cookie = try #require(jar.header(for: Self.parse), "the jar sends the Parse name nothing")
                #expect(cookie.contains("onthemap_session="))
                #expect(jar.header(for: "parse.elsewhere.test") == nil)
                let posted = try await rawExchange(
                    framing, "POST", "/v1/StudentLocation", body: TestPin.json, headers: ["Cookie: \(cookie)"], port: port, host: Self.parse)
                #expect(posted.status.hasSuffix(" 200 OK"), "\(framing): \(posted.status) \(posted.body)")
                #expect(posted.body.contains(#""objectId":"#))

                // A page on one of the names writing on the other is the same site; another site's page is not.
                let fromPage = try await rawExchange(
                    framing, "POST", "/v1/StudentLocation", body: TestPin.json,
                    headers: ["Cookie: \(cookie)", "Origin: https://\(Self.udacity)", "Sec-Fetch-Site: same-site"], port: port, host: Self.parse)
                #expect(fromPage.status.hasSuffix(" 200 OK"), "\(framing): \(fromPage.status) \(fromPage.body)")
                let fromElsewhere = try await rawExchange(
                    framing, "POST", "/v1/StudentLocation", body: TestPin.json,
                    headers: ["Cookie: \(cookie)", "Origin: https://map.example.test.evil.example"], port: port, host: Self.parse)
                #expect(fromElsewhere.status.hasSuffix(" 403 Forbidden"), "\(framing): \(fromElsewhere.status)")

                // Logging out on either name clears the cookies for both.
                let logout = try await rawExchange(
                    framing, "DELETE", "/v1/session", body: "", headers: ["Cookie: \(cookie)"], port: port, host: Self.parse)
                #expect(logout.status.hasSuffix(" 200 OK"), "\(framing): \(logout.status)")
                for line in logout.setCookies { jar.receive(line, from: Self.parse) }
                #expect(jar.header(for: Self.udacity) == nil && jar.header(for: Self.parse) == nil, "\(logout.setCookies)")
            }
        }
    }

    @Test func withoutTheCookieDomainTheCookiesStayWithTheNameThatSetThem() async throws {
        try await withGatewaySocket { client, _ in
            let port = try #require(client.port)
            _ = try await client.signUp(Student("two@example.com"))
            var jar = CookieJar()
            let login = try await rawExchange(.keepAlive, "POST", "/v1/session", body: Self.login, port: port, host: Self.udacity)
            #expect(login.status.hasSuffix(" 200 OK"))
            #expect(login.setCookies.count == 2 && login.setCookies.allSatisfy { !$0.contains("Domain=") }, "\(login.setCookies)")
            for line in login.setCookies { jar.receive(line, from: Self.udacity) }
            #expect(jar.header(for: Self.udacity)?.contains("onthemap_session=") == true)
            #expect(jar.header(for: Self.parse) == nil)
            let posted = try await rawExchange(.keepAlive, "POST", "/v1/StudentLocation", body: TestPin.json, port: port, host: Self.parse)
            #expect(posted.status.hasSuffix(" 401 Unauthorized"))
            let fromPage = try await rawExchange(
                .keepAlive, "POST", "/v1/StudentLocation", body: TestPin.json,
                headers: ["Cookie: \(jar.header(for: Self.udacity) ?? "")", "Origin: https://\(Self.udacity)"], port: port, host: Self.parse)
            #expect(fromPage.status.hasSuffix(" 403 Forbidden"), "another name is another site: \(fromPage.status)")
        }
    }

    @Test(Needs.django) func aSignInWithTheProviderScopesItsCookiesToTheDomain() async throws {
        let domain = try CookieDomain(setting: "map.test")
        try await TestOpenIDProvider.with(users: [OpenIDConnectSignInTests.alice], redirectURI: SignInGateway.callback) { provider in
            try await withGatewaySocket(configure: {
                $0.oidc = OpenIDConnectSignInTests.settings(issuer: provider.issuer)
                $0.upstreamTimeout = .seconds(3)
                $0.cookieDomain = domain
            }) { client, _ in
                let browser = SignInBrowser(gateway: client)
                let end = try await browser.signIn(username: "alice", password: "wonderland-9")
                #expect(end.url == SignInGateway.publicURL + "/", "back on the map")
                let started = try #require(browser.visited.first?.reply.headers[values: .setCookie].first)
                #expect(started.hasPrefix("\(SignInController.stateCookie)=") && started.contains("; Domain=map.test"), "\(started)")
                let callback = try #require(browser.callback)
                let set = callback.headers[values: .setCookie]
                for name in [SignInController.stateCookie, SessionCookies.session, SessionCookies.xsrf] {
                    #expect(set.contains { $0.hasPrefix("\(name)=") && $0.contains("; Domain=map.test") }, "\(name): \(set)")
                }
                #expect(browser.cookie(SessionCookies.session) != nil)
            }
        }
    }

    @Test func aMalformedCookieDomainStopsStartUpWithOneLine() throws {
        let base = [
            "DATABASE_URL": "postgres://u@127.0.0.1:5432/d", "LOCATIONS_URL": "http://127.0.0.1:8081", "INTERNAL_TOKEN": TestDatabase.internalToken,
        ]
        #expect(try GatewayConfiguration.fromEnvironment(base).cookieDomain == nil)
        let set = try GatewayConfiguration.fromEnvironment(base.merging(["SESSION_COOKIE_DOMAIN": "Map.Example.EDU"]) { $1 })
        #expect(set.cookieDomain?.name == "map.example.edu")
        for malformed in [
            "https://map.example.edu", "map.example.edu:443", ".map.example.edu", "map.example.edu.", "map.example.edu/v1", "localhost",
            "127.0.0.1", "-map.example.edu", "map_example.edu", "map..example.edu", "*.example.edu",
        ] {
            do {
                _ = try GatewayConfiguration.fromEnvironment(base.merging(["SESSION_COOKIE_DOMAIN": malformed]) { $1 })
                Issue.record("\(malformed) was taken")
            } catch {
                #expect(
                    "\(error)"
                        == #"SESSION_COOKIE_DOMAIN must be a bare domain name such as map.example.edu (no scheme, port, path or leading dot); got "\#(malformed)""#
                )
            }
        }
    }
}
