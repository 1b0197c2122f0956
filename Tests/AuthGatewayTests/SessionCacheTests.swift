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

    @Test func anAccountsSessionsEndedHereAreDroppedAtOnceAndALookupRacingThatIsNotKept() {
        let cache = listeningCache(holding: [("a1", ada), ("a2", ada), ("b", bob)])
        let generation = cache.generation
        cache.forget(accountKey: ada.key)
        #expect(cache.account(tokenHash: "a1") == nil)
        #expect(cache.account(tokenHash: "a2") == nil)
        #expect(cache.account(tokenHash: "b") == bob)
        cache.store(ada, expiresAt: later, tokenHash: "a1", readAt: generation)
        #expect(cache.account(tokenHash: "a1") == nil, "read from the table before the sessions ended")
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

    /// A logout's wait for the echo of `tokenHash`, run on `executor` as far as it goes; `ended` tells
    /// whether it has returned.
    private func startWaiting(
        for tokenHash: String, in cache: SessionCache, on executor: ManualTaskExecutor
    ) -> (task: Task<Void, Never>, ended: StopFlag) {
        let ended = StopFlag()
        let task = Task(executorPreference: executor) {
            await cache.revocationHeard(tokenHash: tokenHash)
            ended.stop()
        }
        executor.runUntilIdle()
        return (task, ended)
    }

    @Test func aLogoutWaitsForItsOwnRevocationToComeBackAndNoOther() {
        let cache = listeningCache(holding: [("a", ada), ("b", bob)])
        let executor = ManualTaskExecutor()
        let wait = startWaiting(for: "a", in: cache, on: executor)
        cache.heard(SessionCache.revokedPrefix + "b")
        cache.heard(SessionCache.accountPrefix + ada.key)
        executor.runUntilIdle()
        #expect(!wait.ended.isStopped, "other announcements are not its echo")
        cache.heard(SessionCache.revokedPrefix + "a")
        executor.runUntilIdle()
        #expect(wait.ended.isStopped)
    }

    @Test func anEchoHeardBeforeTheWaitOrNoListenerAtAllEndsTheWaitAtOnce() {
        let cache = listeningCache(holding: [("a", ada)])
        let executor = ManualTaskExecutor()
        cache.heard(SessionCache.revokedPrefix + "a")
        #expect(startWaiting(for: "a", in: cache, on: executor).ended.isStopped, "its echo came back before it began to wait")
        cache.setListening(false)
        #expect(startWaiting(for: "b", in: cache, on: executor).ended.isStopped, "nobody listens, so no echo will come")
    }

    @Test func losingTheListenerOrBeingCancelledEndsAWait() {
        let cache = listeningCache(holding: [("a", ada), ("b", bob)])
        let executor = ManualTaskExecutor()
        let lost = startWaiting(for: "a", in: cache, on: executor)
        let cancelled = startWaiting(for: "b", in: cache, on: executor)
        #expect(cache.echoWaiterCount == 2)
        cancelled.task.cancel()
        executor.runUntilIdle()
        #expect(cancelled.ended.isStopped)
        #expect(cache.echoWaiterCount == 1, "one wait cancelled ends no other")
        #expect(!lost.ended.isStopped)
        cache.setListening(false)
        executor.runUntilIdle()
        #expect(lost.ended.isStopped)
    }
}
