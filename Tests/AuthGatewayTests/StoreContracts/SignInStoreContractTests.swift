import Foundation
import OnTheMapShared
import ServiceKit
import Testing

@testable import AuthGateway
@testable import ServiceTwins

/// What `SignInStore` decides, the same in PostgreSQL and in memory: a sign-in on its way through the
/// provider, and a command line's handoff, are each taken at most once and only before they expire. Time is
/// the moment each call is given, from a clock the test moves.
@Suite struct SignInStoreContractTests {
    static let lifetime = Duration.seconds(600)

    static func signIn(expiresAt: Timestamp, commandLine: CommandLineReturn? = nil) -> PendingSignIn {
        PendingSignIn(nonce: "nonce-\(UUID())", codeVerifier: "verifier-\(UUID())", commandLine: commandLine, expiresAt: expiresAt)
    }

    static func grace(_ stores: GatewayStores) async throws -> Account {
        try await stores.accounts.signedIn(
            ExternalIdentity(
                provider: "oidc", issuer: "https://accounts.example.com", subject: "1", email: "grace@example.com", firstName: "Grace",
                lastName: "Hopper"))
    }

    @Test(arguments: GatewayStoresKind.allCases)
    func aSignInComesBackAsItWasBegun(_ kind: GatewayStoresKind) async throws {
        let clock = ManualClock()
        try await withGatewayStores(kind) { stores async throws in
            let browser = Self.signIn(expiresAt: clock.now.adding(Self.lifetime))
            let command = Self.signIn(
                expiresAt: clock.now.adding(Self.lifetime),
                commandLine: CommandLineReturn(redirect: "http://127.0.0.1:53682/callback", challenge: "challenge"))
            try await stores.signIns.begin(browser, stateHash: OIDCSignIn.hash("browser"), at: clock.now)
            try await stores.signIns.begin(command, stateHash: OIDCSignIn.hash("command"), at: clock.now)
            #expect(try await stores.signIns.take(stateHash: OIDCSignIn.hash("browser"), at: clock.now) == browser)
            #expect(try await stores.signIns.take(stateHash: OIDCSignIn.hash("command"), at: clock.now) == command)
        }
    }

    /// A state replayed (a browser's back button, or someone who saw the redirect) finds nothing to finish.
    @Test(arguments: GatewayStoresKind.allCases)
    func aSignInIsTakenAtMostOnce(_ kind: GatewayStoresKind) async throws {
        let clock = ManualClock()
        try await withGatewayStores(kind) { stores async throws in
            try await stores.signIns.begin(
                Self.signIn(expiresAt: clock.now.adding(Self.lifetime)), stateHash: OIDCSignIn.hash("state"), at: clock.now)
            #expect(try await stores.signIns.take(stateHash: OIDCSignIn.hash("state"), at: clock.now) != nil)
            #expect(try await stores.signIns.take(stateHash: OIDCSignIn.hash("state"), at: clock.now) == nil)
        }
    }

    @Test(arguments: GatewayStoresKind.allCases)
    func aStateNeverBegunFindsNoSignIn(_ kind: GatewayStoresKind) async throws {
        let clock = ManualClock()
        try await withGatewayStores(kind) { stores async throws in
            try await stores.signIns.begin(
                Self.signIn(expiresAt: clock.now.adding(Self.lifetime)), stateHash: OIDCSignIn.hash("state"), at: clock.now)
            #expect(try await stores.signIns.take(stateHash: OIDCSignIn.hash("another"), at: clock.now) == nil)
        }
    }

    @Test(arguments: GatewayStoresKind.allCases)
    func aSignInIsTakenOnlyBeforeItExpires(_ kind: GatewayStoresKind) async throws {
        let clock = ManualClock()
        try await withGatewayStores(kind) { stores async throws in
            let expiresAt = clock.now.adding(Self.lifetime)
            try await stores.signIns.begin(Self.signIn(expiresAt: expiresAt), stateHash: OIDCSignIn.hash("early"), at: clock.now)
            try await stores.signIns.begin(Self.signIn(expiresAt: expiresAt), stateHash: OIDCSignIn.hash("late"), at: clock.now)
            clock.advance(by: Self.lifetime - .milliseconds(1))
            #expect(try await stores.signIns.take(stateHash: OIDCSignIn.hash("early"), at: clock.now) != nil)
            clock.advance(by: .milliseconds(1))
            #expect(try await stores.signIns.take(stateHash: OIDCSignIn.hash("late"), at: clock.now) == nil)
        }
    }

    /// An expired sign-in is not merely refused: taking it removes it, so it never comes back.
    @Test(arguments: GatewayStoresKind.allCases)
    func takingAnExpiredSignInRemovesIt(_ kind: GatewayStoresKind) async throws {
        let clock = ManualClock()
        try await withGatewayStores(kind) { stores async throws in
            let begun = clock.now
            try await stores.signIns.begin(Self.signIn(expiresAt: begun.adding(Self.lifetime)), stateHash: OIDCSignIn.hash("state"), at: begun)
            #expect(try await stores.signIns.take(stateHash: OIDCSignIn.hash("state"), at: begun.adding(Self.lifetime)) == nil)
            #expect(try await stores.signIns.take(stateHash: OIDCSignIn.hash("state"), at: begun) == nil)
        }
    }

    /// Sign-ins abandoned at the provider do not pile up: each new one clears those expired.
    @Test(arguments: GatewayStoresKind.allCases)
    func beginningASignInClearsTheExpiredOnes(_ kind: GatewayStoresKind) async throws {
        let clock = ManualClock()
        try await withGatewayStores(kind) { stores async throws in
            let begun = clock.now
            try await stores.signIns.begin(Self.signIn(expiresAt: begun.adding(Self.lifetime)), stateHash: OIDCSignIn.hash("abandoned"), at: begun)
            try await stores.signIns.begin(Self.signIn(expiresAt: begun.adding(Self.lifetime * 2)), stateHash: OIDCSignIn.hash("waiting"), at: begun)
            clock.advance(by: Self.lifetime)
            try await stores.signIns.begin(Self.signIn(expiresAt: clock.now.adding(Self.lifetime)), stateHash: OIDCSignIn.hash("new"), at: clock.now)
            // Asked as if earlier, when it had not expired: it is gone all the same.
            #expect(try await stores.signIns.take(stateHash: OIDCSignIn.hash("abandoned"), at: begun) == nil)
            #expect(try await stores.signIns.take(stateHash: OIDCSignIn.hash("waiting"), at: clock.now) != nil, "one not expired stays")
        }
    }

    @Test(arguments: GatewayStoresKind.allCases)
    func aHandoffIsTakenOnceWithItsAccountAndChallenge(_ kind: GatewayStoresKind) async throws {
        let clock = ManualClock()
        try await withGatewayStores(kind) { stores async throws in
            let grace = try await Self.grace(stores)
            let handoff = PendingHandoff(accountKey: grace.key, challenge: "challenge")
            try await stores.signIns.beginHandoff(
                handoff, codeHash: OIDCSignIn.hash("code"), expiresAt: clock.now.adding(Self.lifetime), at: clock.now)
            #expect(try await stores.signIns.takeHandoff(codeHash: OIDCSignIn.hash("another"), at: clock.now) == nil)
            #expect(try await stores.signIns.takeHandoff(codeHash: OIDCSignIn.hash("code"), at: clock.now) == handoff)
            #expect(try await stores.signIns.takeHandoff(codeHash: OIDCSignIn.hash("code"), at: clock.now) == nil)
        }
    }

    @Test(arguments: GatewayStoresKind.allCases)
    func aHandoffIsTakenOnlyBeforeItExpires(_ kind: GatewayStoresKind) async throws {
        let clock = ManualClock()
        try await withGatewayStores(kind) { stores async throws in
            let grace = try await Self.grace(stores)
            let handoff = PendingHandoff(accountKey: grace.key, challenge: "challenge")
            let expiresAt = clock.now.adding(Self.lifetime)
            try await stores.signIns.beginHandoff(handoff, codeHash: OIDCSignIn.hash("early"), expiresAt: expiresAt, at: clock.now)
            try await stores.signIns.beginHandoff(handoff, codeHash: OIDCSignIn.hash("late"), expiresAt: expiresAt, at: clock.now)
            clock.advance(by: Self.lifetime - .milliseconds(1))
            #expect(try await stores.signIns.takeHandoff(codeHash: OIDCSignIn.hash("early"), at: clock.now) == handoff)
            clock.advance(by: .milliseconds(1))
            #expect(try await stores.signIns.takeHandoff(codeHash: OIDCSignIn.hash("late"), at: clock.now) == nil)
        }
    }

    @Test(arguments: GatewayStoresKind.allCases)
    func beginningAHandoffClearsTheExpiredOnes(_ kind: GatewayStoresKind) async throws {
        let clock = ManualClock()
        try await withGatewayStores(kind) { stores async throws in
            let grace = try await Self.grace(stores)
            let handoff = PendingHandoff(accountKey: grace.key, challenge: "challenge")
            let begun = clock.now
            try await stores.signIns.beginHandoff(handoff, codeHash: OIDCSignIn.hash("abandoned"), expiresAt: begun.adding(Self.lifetime), at: begun)
            clock.advance(by: Self.lifetime)
            try await stores.signIns.beginHandoff(
                handoff, codeHash: OIDCSignIn.hash("new"), expiresAt: clock.now.adding(Self.lifetime), at: clock.now)
            #expect(try await stores.signIns.takeHandoff(codeHash: OIDCSignIn.hash("abandoned"), at: begun) == nil)
            #expect(try await stores.signIns.takeHandoff(codeHash: OIDCSignIn.hash("new"), at: clock.now) == handoff)
        }
    }
}
