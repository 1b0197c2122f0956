import Foundation
import OnTheMapShared
import ServiceKit
import Testing

@testable import AuthGateway
@testable import ServiceTwins

/// What `SessionStore` decides, the same in PostgreSQL and in memory: which token opens which account, and
/// until when, by the store's clock.
@Suite struct SessionStoreContractTests {
    static let hour = Duration.seconds(3600)

    static func ada(_ stores: GatewayStores) async throws -> Account {
        try await stores.accounts.createLocal(email: EmailAddress("ada@example.com"), passwordHash: "h", firstName: "Ada", lastName: "Lovelace")
    }

    @Test(arguments: GatewayStoresKind.allCases)
    func aNewSessionIsFoundByItsTokensHashWithItsAccountAndExpiry(_ kind: GatewayStoresKind) async throws {
        let clock = ManualClock()
        try await withGatewayStores(kind, clock: clock) { stores async throws in
            let ada = try await Self.ada(stores)
            let (token, expiresAt) = try await stores.sessions.create(for: ada, lifetime: Self.hour)
            #expect(expiresAt == clock.now.adding(Self.hour))
            let found = try #require(try await stores.sessions.account(tokenHash: token.hash))
            #expect(found.account == ada)
            #expect(found.expiresAt == expiresAt)
            let live = try await stores.sessions.liveSessions(tokenHashes: [token.hash.hexString])
            #expect(live[token.hash.hexString]?.account == ada)
            #expect(live[token.hash.hexString]?.expiresAt == expiresAt)
        }
    }

    @Test(arguments: GatewayStoresKind.allCases)
    func aTokenNeverIssuedOpensNothing(_ kind: GatewayStoresKind) async throws {
        try await withGatewayStores(kind) { stores async throws in
            let ada = try await Self.ada(stores)
            _ = try await stores.sessions.create(for: ada, lifetime: Self.hour)
            let stranger = SessionToken.generate()
            #expect(try await stores.sessions.account(tokenHash: stranger.hash) == nil)
            #expect(try await stores.sessions.liveSessions(tokenHashes: [stranger.hash.hexString]).isEmpty)
            #expect(try await stores.sessions.revoke(tokenHash: stranger.hash) == false)
        }
    }

    /// Every session of an account is its own: each login gets a token of its own.
    @Test(arguments: GatewayStoresKind.allCases)
    func eachSessionHasItsOwnToken(_ kind: GatewayStoresKind) async throws {
        try await withGatewayStores(kind) { stores async throws in
            let ada = try await Self.ada(stores)
            let (first, _) = try await stores.sessions.create(for: ada, lifetime: Self.hour)
            let (second, _) = try await stores.sessions.create(for: ada, lifetime: Self.hour)
            #expect(first != second)
            #expect(try await stores.sessions.liveSessions(tokenHashes: [first, second].map(\.hash.hexString)).count == 2)
        }
    }

    @Test(arguments: GatewayStoresKind.allCases)
    func aSessionIsLiveUntilItsLifetimeHasPassedByTheStoresClock(_ kind: GatewayStoresKind) async throws {
        let clock = ManualClock()
        try await withGatewayStores(kind, clock: clock) { stores async throws in
            let ada = try await Self.ada(stores)
            let (token, _) = try await stores.sessions.create(for: ada, lifetime: Self.hour)
            clock.advance(by: Self.hour - .milliseconds(1))
            #expect(try await stores.sessions.account(tokenHash: token.hash)?.account == ada)
            #expect(try await stores.sessions.liveSessions(tokenHashes: [token.hash.hexString]).count == 1)
            clock.advance(by: .milliseconds(1))
            #expect(try await stores.sessions.account(tokenHash: token.hash) == nil)
            #expect(try await stores.sessions.liveSessions(tokenHashes: [token.hash.hexString]).isEmpty)
        }
    }

    @Test(arguments: GatewayStoresKind.allCases)
    func aRevokedSessionIsNotLiveAndRevokingItAgainFindsNothingToEnd(_ kind: GatewayStoresKind) async throws {
        try await withGatewayStores(kind) { stores async throws in
            let ada = try await Self.ada(stores)
            let (token, _) = try await stores.sessions.create(for: ada, lifetime: Self.hour)
            #expect(try await stores.sessions.revoke(tokenHash: token.hash))
            #expect(try await stores.sessions.account(tokenHash: token.hash) == nil)
            #expect(try await stores.sessions.liveSessions(tokenHashes: [token.hash.hexString]).isEmpty)
            #expect(try await stores.sessions.revoke(tokenHash: token.hash) == false)
        }
    }

    /// Logging out on one device leaves the student logged in on the others.
    @Test(arguments: GatewayStoresKind.allCases)
    func revokingOneSessionLeavesTheAccountsOthersLive(_ kind: GatewayStoresKind) async throws {
        try await withGatewayStores(kind) { stores async throws in
            let ada = try await Self.ada(stores)
            let (phone, _) = try await stores.sessions.create(for: ada, lifetime: Self.hour)
            let (laptop, _) = try await stores.sessions.create(for: ada, lifetime: Self.hour)
            try await stores.sessions.revoke(tokenHash: phone.hash)
            #expect(try await stores.sessions.account(tokenHash: laptop.hash)?.account == ada)
        }
    }

    /// What a replica's cache asks when it checks the sessions it holds: only the live ones come back, each
    /// under the hash it was asked by.
    @Test(arguments: GatewayStoresKind.allCases)
    func liveSessionsAnswersOnlyTheLiveOnesOfThoseAsked(_ kind: GatewayStoresKind) async throws {
        let clock = ManualClock()
        try await withGatewayStores(kind, clock: clock) { stores async throws in
            let ada = try await Self.ada(stores)
            let (short, _) = try await stores.sessions.create(for: ada, lifetime: .seconds(60))
            let (revoked, _) = try await stores.sessions.create(for: ada, lifetime: Self.hour)
            let (live, expiresAt) = try await stores.sessions.create(for: ada, lifetime: Self.hour)
            try await stores.sessions.revoke(tokenHash: revoked.hash)
            clock.advance(by: .seconds(60))
            let asked = [short, revoked, live, SessionToken.generate()].map(\.hash.hexString)
            let found = try await stores.sessions.liveSessions(tokenHashes: asked)
            #expect(Array(found.keys) == [live.hash.hexString])
            #expect(found[live.hash.hexString]?.account == ada)
            #expect(found[live.hash.hexString]?.expiresAt == expiresAt)
            #expect(try await stores.sessions.liveSessions(tokenHashes: []).isEmpty)
        }
    }

    /// An identity provider's names change at its next login; every open session shows the new ones.
    @Test(arguments: GatewayStoresKind.allCases)
    func aSessionAnswersItsAccountAsItIsNow(_ kind: GatewayStoresKind) async throws {
        try await withGatewayStores(kind) { stores async throws in
            var jarrod = Account(key: "3903878747", provider: "udacity", email: "jarrod@example.com", firstName: "Jarrod", lastName: "Parkes")
            try await stores.accounts.upsertExternal(jarrod)
            let (token, _) = try await stores.sessions.create(for: jarrod, lifetime: Self.hour)
            jarrod.lastName = "Parkes-Smith"
            try await stores.accounts.upsertExternal(jarrod)
            #expect(try await stores.sessions.account(tokenHash: token.hash)?.account == jarrod)
            #expect(try await stores.sessions.liveSessions(tokenHashes: [token.hash.hexString])[token.hash.hexString]?.account == jarrod)
        }
    }

    /// A disabling revokes the account's sessions: a logout of one of them afterwards has nothing to end.
    @Test(arguments: GatewayStoresKind.allCases)
    func aSessionADisablingEndedIsRevokedAlready(_ kind: GatewayStoresKind) async throws {
        try await withGatewayStores(kind) { stores async throws in
            let ada = try await Self.ada(stores)
            let (token, _) = try await stores.sessions.create(for: ada, lifetime: Self.hour)
            _ = try await stores.accounts.disable(emailKey: "ada@example.com", by: "ops", reason: nil)
            #expect(try await stores.sessions.revoke(tokenHash: token.hash) == false)
            _ = try await stores.accounts.enable(emailKey: "ada@example.com")
            #expect(try await stores.sessions.revoke(tokenHash: token.hash) == false)
        }
    }

    @Test(arguments: GatewayStoresKind.allCases)
    func aSessionAnErasureEndedIsRevokedAlready(_ kind: GatewayStoresKind) async throws {
        try await withGatewayStores(kind) { stores async throws in
            let ada = try await Self.ada(stores)
            let (token, _) = try await stores.sessions.create(for: ada, lifetime: Self.hour)
            try await stores.accounts.beginErasure(key: ada.key)
            #expect(try await stores.sessions.revoke(tokenHash: token.hash) == false)
        }
    }

    /// The account a session opens for must be one the store holds: an account that was never added (or is
    /// gone) opens nothing.
    @Test(arguments: GatewayStoresKind.allCases)
    func anAccountTheStoreDoesNotHoldOpensNoSession(_ kind: GatewayStoresKind) async throws {
        try await withGatewayStores(kind) { stores async throws in
            let stranger = Account(key: "1234567890", provider: "local", email: "x@example.com", firstName: "X", lastName: "Y")
            await #expect(throws: SessionStoreError.accountDisabled) { try await stores.sessions.create(for: stranger, lifetime: Self.hour) }
        }
    }
}
