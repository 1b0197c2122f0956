import OnTheMapShared
import ServiceKit
import TestSupport
import Testing

@testable import AuthGateway

/// What a replica's session cache serves when it loses, and regains, the announcements of revocations.
@Suite struct SessionCacheTests {
    let ada = Account(key: "1111111111", provider: "local", email: "ada@example.com", firstName: "Ada", lastName: "Lovelace")
    let bob = Account(key: "2222222222", provider: "local", email: "bob@example.com", firstName: "Bob", lastName: "Kahn")
    let later = Timestamp(millisecondsSince1970: Timestamp.now().millisecondsSince1970 + 3_600_000)

    private func listeningCache(holding accounts: [(String, Account)]) -> SessionCache {
        let cache = SessionCache()
        cache.setListening(true)
        for (hash, account) in accounts { cache.store(account, expiresAt: later, tokenHash: hash, readAt: cache.generation) }
        return cache
    }

    @Test func sessionsHeldWhenTheListenerIsLostAreStillServedButNothingNewIsCached() {
        let cache = listeningCache(holding: [("a", ada)])
        cache.setListening(false)
        #expect(cache.account(tokenHash: "a") == ada)
        #expect(cache.unconfirmed == ["a"])
        cache.store(bob, expiresAt: later, tokenHash: "b", readAt: cache.generation)
        #expect(cache.account(tokenHash: "b") == nil, "a session read while nobody listens may be revoked unheard")
    }

    @Test func anEntryIsServedUntilItsSessionExpiresOrItIsTooOldToTrust() {
        let clock = ManualClock()
        let cache = SessionCache(maximumAge: .seconds(60), clock: clock)
        cache.setListening(true)
        cache.store(ada, expiresAt: clock.now.adding(.seconds(30)), tokenHash: "a", readAt: cache.generation)
        cache.store(bob, expiresAt: clock.now.adding(.seconds(3600)), tokenHash: "b", readAt: cache.generation)
        clock.advance(by: .seconds(29))
        #expect(cache.account(tokenHash: "a") == ada)
        clock.advance(by: .seconds(1))
        #expect(cache.account(tokenHash: "a") == nil, "the session has expired")
        #expect(cache.account(tokenHash: "b") == bob)
        clock.advance(by: .seconds(30))
        #expect(cache.account(tokenHash: "b") == nil, "held 60 s: asked of the table again, in case a revocation went unheard")
    }

    @Test func onceCheckedTheRevokedAreDroppedAndTheLiveKeptWithTheirAccountsAsTheyAreNow() {
        let cache = listeningCache(holding: [("a", ada), ("b", bob)])
        cache.setListening(false)
        cache.setListening(true)
        var renamed = ada
        renamed.firstName = "Augusta"
        cache.confirm(["a", "b"], live: ["a": (renamed, later)])
        #expect(cache.account(tokenHash: "a")?.firstName == "Augusta")
        #expect(cache.account(tokenHash: "b") == nil)
        #expect(cache.unconfirmed.isEmpty)
    }

    @Test func aRevocationHeardDuringTheCheckIsNotUndoneByIt() {
        let cache = listeningCache(holding: [("a", ada)])
        cache.setListening(false)
        cache.setListening(true)
        cache.heard(SessionCache.revokedPrefix + "a")
        cache.confirm(["a"], live: ["a": (ada, later)])
        #expect(cache.account(tokenHash: "a") == nil)
    }

    @Test func aLogoutWaitsForItsOwnRevocationToComeBackAndNoOther() async {
        let cache = listeningCache(holding: [("a", ada), ("b", bob)])
        let heard = StopFlag()
        let waiting = Task {
            await cache.revocationHeard(tokenHash: "a")
            heard.stop()
        }
        while cache.echoWaiterCount == 0 { await Task.yield() }
        cache.heard(SessionCache.revokedPrefix + "b")
        cache.heard(SessionCache.accountPrefix + ada.key)
        #expect(cache.echoWaiterCount == 1, "other announcements are not its echo")
        cache.heard(SessionCache.revokedPrefix + "a")
        await waiting.value
        #expect(heard.isStopped)
    }

    @Test func anEchoHeardBeforeTheWaitOrNoListenerAtAllEndsTheWaitAtOnce() async {
        let cache = listeningCache(holding: [("a", ada)])
        cache.heard(SessionCache.revokedPrefix + "a")
        await cache.revocationHeard(tokenHash: "a")
        cache.setListening(false)
        await cache.revocationHeard(tokenHash: "b")
    }

    @Test func losingTheListenerOrBeingCancelledEndsAWait() async {
        let cache = listeningCache(holding: [("a", ada), ("b", bob)])
        let ended = StopFlag()
        let lost = Task {
            await cache.revocationHeard(tokenHash: "a")
            ended.stop()
        }
        let cancelled = Task { await cache.revocationHeard(tokenHash: "b") }
        while cache.echoWaiterCount < 2 { await Task.yield() }
        cancelled.cancel()
        await cancelled.value
        #expect(cache.echoWaiterCount == 1, "one wait cancelled ends no other")
        #expect(!ended.isStopped)
        cache.setListening(false)
        await lost.value
    }
}
