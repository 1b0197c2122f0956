import AsyncHTTPClient
import Foundation
import OnTheMapShared
import TestSupport
import Testing

@testable import OnTheMapClient

/// The library's part of a sign-in in the browser: the proof key, the loopback address the browser comes
/// back to, and the gateway's token exchange.
@Suite struct BrowserSignInCallTests {
    @Test func theChallengeIsRFC7636sS256OfTheVerifier() {
        let example = ProofKey(verifier: "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk")
        #expect(example.challenge == "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM")
        let (one, two) = (ProofKey(), ProofKey())
        #expect(one.verifier != two.verifier)
        #expect(one.verifier.utf8.count == 43 && Base64URL.decode(one.verifier)?.count == 32)
        #expect(one.challenge.utf8.count == 43 && one.challenge == ProofKey(verifier: one.verifier).challenge)
    }

    @Test func theBrowserIsSentToTheGatewayWithTheReturnAddressAndTheChallenge() {
        let proof = ProofKey(verifier: "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk")
        let url = OnTheMapClient(gateway: "http://127.0.0.1:8080/").browserSignInURL(returningTo: "http://127.0.0.1:5000/callback", proof: proof)
        #expect(
            url
                == "http://127.0.0.1:8080/v1/auth/oidc/login?cli_redirect=http%3A%2F%2F127.0.0.1%3A5000%2Fcallback&cli_challenge=E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        )
    }

    @Test func theFirstCallbackIsKeptAndEveryOtherRequestIsAnsweredAndIgnored() async throws {
        let loopback = try await LoopbackRedirect.start()
        defer { loopback.close() }
        #expect(loopback.uri.hasPrefix("http://127.0.0.1:") && loopback.uri.hasSuffix("/callback"))
        let base = String(loopback.uri.dropLast("/callback".count))
        func get(_ path: String, posting: Bool = false) async throws -> (status: UInt, page: String) {
            var request = HTTPClientRequest(url: base + path)
            request.method = posting ? .POST : .GET
            let response = try await HTTPClient.shared.execute(request, timeout: .seconds(5))
            #expect(response.headers.first(name: "Connection") == "close")
            return (response.status.code, String(buffer: try await response.body.collect(upTo: 1 << 16)))
        }
        #expect(try await get("/favicon.ico").status == 404)
        #expect(try await get("/callback").status == 400)
        #expect(try await get("/callback?code=posted", posting: true).status == 404)
        let signedIn = try await get("/callback?code=first%2Bcode")
        #expect(signedIn.status == 200)
        #expect(signedIn.page.contains("<p>You are signed in to On The Map; you can close this tab.</p>"))
        #expect(try await get("/callback?code=second").status == 200)
        #expect(await loopback.callback(within: .seconds(5)) == .code("first+code"))
    }

    @Test func anErrorComesBackOnOneLineAndIsShownEscaped() {
        let request = LoopbackRequest(method: .GET, target: "/callback?error=%3Cb%3ENo%3C%2Fb%3E%0Asaid%20%1B%5B31mthe%20provider")
        #expect(request.callback == .error("<b>No</b> said  [31mthe provider"))
        #expect(request.status == .ok)
        #expect(request.page.contains("The sign-in to On The Map failed: &lt;b&gt;No&lt;/b&gt; said  [31mthe provider You can close this tab."))
    }

    @Test func noCallbackWithinTheTimeIsNil() async throws {
        let loopback = try await LoopbackRedirect.start()
        defer { loopback.close() }
        let clock = SteppingClock()
        let waiting = Task { await loopback.callback(within: .seconds(300), clock: clock) }
        _ = try await waitFor(within: .seconds(5)) { clock.sleeping == 1 }
        clock.advance(by: .seconds(299))
        #expect(clock.sleeping == 1)
        clock.advance(by: .seconds(1))
        #expect(await waiting.value == nil)
    }

    @Test func aGatewayWithAProviderTakesOnlyItsOwnCodes() async throws {
        let system = try await ClientSystem.start(gatewayEnvironment: SignInProvider.nowhere)
        defer { system.stop() }
        let client = system.client()
        #expect(try await client.offersBrowserSignIn())
        let refused = await thrownError { try await client.redeemBrowserSignIn(code: "not-a-code", proof: ProofKey()) }
        #expect(
            refused
                == .refused(message: "This sign-in code is unknown, used or expired, or does not match its verifier; sign in again.", parameter: nil))
        let unreachable = await thrownError { try await OnTheMapClient(gateway: deadGatewayURL()).offersBrowserSignIn() }
        guard case .unreachable = unreachable else {
            Issue.record("expected unreachable, got \(String(describing: unreachable))")
            return
        }
    }

    @Test func aGatewayWithoutAProviderOffersNoSignInInTheBrowser() async throws {
        try await ClientSystem.with { system in
            let offers = try await system.client().offersBrowserSignIn()
            #expect(!offers)
        }
    }
}
