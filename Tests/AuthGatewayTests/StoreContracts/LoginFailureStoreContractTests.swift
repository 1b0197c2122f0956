import Foundation
import OnTheMapShared
import ServiceKit
import Testing

@testable import AuthGateway
@testable import ServiceTwins

/// What `LoginFailureStore` decides, the same in PostgreSQL (`auth.count_attempt`) and in memory: how many
/// failed logins each subject may have within the window, and how long a refused attempt is told to wait.
/// Time is the moment each attempt is given, from a clock the test moves.
@Suite struct LoginFailureStoreContractTests {
    static let window = Duration.seconds(900)
    static let account = "account:ada@example.com"
    static let address = "address:203.0.113.7"

    /// Counts an attempt of these subjects with these limits at the clock's time: nil when admitted (and
    /// counted), else the seconds to wait.
    static func attempt(
        _ store: any LoginFailureStore, _ subjects: [String], limits: [Int], window: Duration = LoginFailureStoreContractTests.window,
        at clock: ManualClock
    ) async throws -> Int? {
        try await store.count(LoginThrottle.Attempt(id: UUID(), subjects: subjects), limits: limits, window: window, at: clock.now)
    }

    @Test(arguments: GatewayStoresKind.allCases)
    func failuresAreAdmittedUpToTheLimitAndTheNextIsToldToWaitOutTheWindow(_ kind: GatewayStoresKind) async throws {
        let clock = ManualClock()
        try await withGatewayStores(kind) { stores async throws in
            for _ in 0..<5 {
                #expect(try await Self.attempt(stores.loginFailures, [Self.account], limits: [5], at: clock) == nil)
            }
            // The clock stands still: the failures that hold the account back age out a whole window from now.
            #expect(try await Self.attempt(stores.loginFailures, [Self.account], limits: [5], at: clock) == 900)
        }
    }

    @Test(arguments: GatewayStoresKind.allCases)
    func aFailureAgesOutOnceItIsAsOldAsTheWindow(_ kind: GatewayStoresKind) async throws {
        let clock = ManualClock()
        try await withGatewayStores(kind) { stores async throws in
            #expect(try await Self.attempt(stores.loginFailures, [Self.account], limits: [1], at: clock) == nil)
            clock.advance(by: Self.window - .milliseconds(1))
            #expect(try await Self.attempt(stores.loginFailures, [Self.account], limits: [1], at: clock) == 1)
            clock.advance(by: .milliseconds(1))
            #expect(try await Self.attempt(stores.loginFailures, [Self.account], limits: [1], at: clock) == nil)
        }
    }

    /// Were refused attempts counted, a guesser who kept trying would never get in, nor would the student.
    @Test(arguments: GatewayStoresKind.allCases)
    func aRefusedAttemptIsNotCounted(_ kind: GatewayStoresKind) async throws {
        let clock = ManualClock()
        try await withGatewayStores(kind) { stores async throws in
            #expect(try await Self.attempt(stores.loginFailures, [Self.account], limits: [1], at: clock) == nil)
            for _ in 0..<3 {
                clock.advance(by: .seconds(100))
                #expect(try await Self.attempt(stores.loginFailures, [Self.account], limits: [1], at: clock) != nil)
            }
            clock.advance(by: .seconds(600))
            #expect(try await Self.attempt(stores.loginFailures, [Self.account], limits: [1], at: clock) == nil)
        }
    }

    /// With the limit reached, the next attempt waits until one of the failures it counts ages out: the
    /// oldest of the newest `limit`, not the oldest kept.
    @Test(arguments: GatewayStoresKind.allCases)
    func theWaitLastsUntilTheOldestOfTheNewestLimitFailuresAgesOut(_ kind: GatewayStoresKind) async throws {
        let clock = ManualClock()
        try await withGatewayStores(kind) { stores async throws in
            let window = Duration.seconds(60)
            for _ in 0..<3 {
                #expect(try await Self.attempt(stores.loginFailures, [Self.account], limits: [3], window: window, at: clock) == nil)
                clock.advance(by: .seconds(10))
            }
            // Failures at 0, 10 and 20 s; now 30 s.
            #expect(try await Self.attempt(stores.loginFailures, [Self.account], limits: [3], window: window, at: clock) == 30)
            clock.advance(by: .seconds(30))
            #expect(try await Self.attempt(stores.loginFailures, [Self.account], limits: [3], window: window, at: clock) == nil)
            // Failures at 10, 20 and 60 s; now 61 s: the one at 10 s ages out at 70 s.
            clock.advance(by: .seconds(1))
            #expect(try await Self.attempt(stores.loginFailures, [Self.account], limits: [3], window: window, at: clock) == 9)
        }
    }

    @Test(arguments: GatewayStoresKind.allCases)
    func theWaitIsRoundedUpToWholeSecondsAndIsAtLeastOne(_ kind: GatewayStoresKind) async throws {
        let clock = ManualClock()
        try await withGatewayStores(kind) { stores async throws in
            #expect(try await Self.attempt(stores.loginFailures, [Self.account], limits: [1], at: clock) == nil)
            clock.advance(by: .milliseconds(898_200))
            #expect(try await Self.attempt(stores.loginFailures, [Self.account], limits: [1], at: clock) == 2)
            clock.advance(by: .milliseconds(1_700))
            #expect(try await Self.attempt(stores.loginFailures, [Self.account], limits: [1], at: clock) == 1)
        }
    }

    /// A login counts against its account and its address, each with its own limit: any one at its limit
    /// refuses the attempt.
    @Test(arguments: GatewayStoresKind.allCases)
    func eachSubjectHasItsOwnLimitAndAnyOneAtItRefusesTheAttempt(_ kind: GatewayStoresKind) async throws {
        let clock = ManualClock()
        try await withGatewayStores(kind) { stores async throws in
            let failures = stores.loginFailures
            let limits = [2, 3]
            #expect(try await Self.attempt(failures, ["account:a", "address:x"], limits: limits, at: clock) == nil)
            #expect(try await Self.attempt(failures, ["account:a", "address:x"], limits: limits, at: clock) == nil)
            #expect(try await Self.attempt(failures, ["account:a", "address:y"], limits: limits, at: clock) != nil, "the account is at its limit")
            #expect(try await Self.attempt(failures, ["account:b", "address:x"], limits: limits, at: clock) == nil)
            #expect(try await Self.attempt(failures, ["account:c", "address:x"], limits: limits, at: clock) != nil, "the address is at its limit")
            #expect(try await Self.attempt(failures, ["account:c", "address:y"], limits: limits, at: clock) == nil)
        }
    }

    /// A refusal counts against none of the attempt's subjects: the one not at its limit is not charged.
    @Test(arguments: GatewayStoresKind.allCases)
    func anAttemptRefusedByOneSubjectIsCountedAgainstNoneOfThem(_ kind: GatewayStoresKind) async throws {
        let clock = ManualClock()
        try await withGatewayStores(kind) { stores async throws in
            let failures = stores.loginFailures
            #expect(try await Self.attempt(failures, ["account:a"], limits: [1], at: clock) == nil)
            for _ in 0..<3 {
                #expect(try await Self.attempt(failures, ["account:a", "address:x"], limits: [1, 2], at: clock) != nil)
            }
            #expect(try await Self.attempt(failures, ["account:b", "address:x"], limits: [1, 2], at: clock) == nil)
            #expect(try await Self.attempt(failures, ["account:c", "address:x"], limits: [1, 2], at: clock) == nil)
        }
    }

    @Test(arguments: GatewayStoresKind.allCases)
    func theLongestWaitOfTheSubjectsAtTheirLimitIsAnswered(_ kind: GatewayStoresKind) async throws {
        let clock = ManualClock()
        try await withGatewayStores(kind) { stores async throws in
            let failures = stores.loginFailures
            #expect(try await Self.attempt(failures, ["account:a"], limits: [1], at: clock) == nil)
            clock.advance(by: .seconds(100))
            #expect(try await Self.attempt(failures, ["address:x"], limits: [1], at: clock) == nil)
            // The account's failure ages out at 900 s, the address's at 1,000 s; now 100 s.
            #expect(try await Self.attempt(failures, ["account:a", "address:x"], limits: [1, 1], at: clock) == 900)
        }
    }

    /// A right password: the attempt counted before the check was no failure.
    @Test(arguments: GatewayStoresKind.allCases)
    func anAttemptTakenBackNoLongerCounts(_ kind: GatewayStoresKind) async throws {
        let clock = ManualClock()
        try await withGatewayStores(kind) { stores async throws in
            let failures = stores.loginFailures
            #expect(try await Self.attempt(failures, [Self.account, Self.address], limits: [2, 2], at: clock) == nil)
            let right = LoginThrottle.Attempt(id: UUID(), subjects: [Self.account, Self.address])
            #expect(try await failures.count(right, limits: [2, 2], window: Self.window, at: clock.now) == nil)
            try await failures.remove(right, forgiving: nil)
            #expect(try await Self.attempt(failures, [Self.account, Self.address], limits: [2, 2], at: clock) == nil)
            #expect(
                try await Self.attempt(failures, [Self.account, Self.address], limits: [2, 2], at: clock) != nil, "the other failures still count")
        }
    }

    /// A right password forgives the account's earlier typos; the address keeps its record, or a guesser
    /// who knew one password could clear the address's failures of every other account.
    @Test(arguments: GatewayStoresKind.allCases)
    func aRightPasswordForgivesTheAccountsFailuresButNotTheAddresss(_ kind: GatewayStoresKind) async throws {
        let clock = ManualClock()
        try await withGatewayStores(kind) { stores async throws in
            let failures = stores.loginFailures
            for _ in 0..<2 {
                #expect(try await Self.attempt(failures, [Self.account, Self.address], limits: [3, 3], at: clock) == nil)
            }
            let right = LoginThrottle.Attempt(id: UUID(), subjects: [Self.account, Self.address])
            #expect(try await failures.count(right, limits: [3, 3], window: Self.window, at: clock.now) == nil)
            try await failures.remove(right, forgiving: Self.account)
            for _ in 0..<3 {
                #expect(try await Self.attempt(failures, [Self.account], limits: [3], at: clock) == nil)
            }
            #expect(try await Self.attempt(failures, [Self.address], limits: [3], at: clock) == nil)
            #expect(try await Self.attempt(failures, [Self.address], limits: [3], at: clock) == 900)
        }
    }

    /// Forgiving reaches only the subjects the attempt was counted against: a sign-up's attempt forgives
    /// no account.
    @Test(arguments: GatewayStoresKind.allCases)
    func forgivingReachesOnlyTheAttemptsOwnSubjects(_ kind: GatewayStoresKind) async throws {
        let clock = ManualClock()
        try await withGatewayStores(kind) { stores async throws in
            let failures = stores.loginFailures
            #expect(try await Self.attempt(failures, [Self.account], limits: [1], at: clock) == nil)
            let signUp = LoginThrottle.Attempt(id: UUID(), subjects: ["signup:203.0.113.7"])
            #expect(try await failures.count(signUp, limits: [10], window: Self.window, at: clock.now) == nil)
            try await failures.remove(signUp, forgiving: Self.account)
            #expect(try await Self.attempt(failures, [Self.account], limits: [1], at: clock) != nil)
        }
    }

    /// Checking and counting are one step: guesses sent together are counted in turn, and no more of them
    /// are admitted than the limit.
    @Test(arguments: GatewayStoresKind.allCases)
    func attemptsSentTogetherAreCountedInTurn(_ kind: GatewayStoresKind) async throws {
        let clock = ManualClock()
        try await withGatewayStores(kind) { stores async throws in
            let failures = stores.loginFailures
            let admitted = try await withThrowingTaskGroup(of: Bool.self) { group in
                for _ in 0..<20 {
                    group.addTask { try await Self.attempt(failures, [Self.account, Self.address], limits: [5, 20], at: clock) == nil }
                }
                return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(admitted == 5)
        }
    }
}
