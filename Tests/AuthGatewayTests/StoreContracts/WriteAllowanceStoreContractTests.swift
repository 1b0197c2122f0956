import Foundation
import OnTheMapShared
import ServiceKit
import TestSupport
import Testing

@testable import AuthGateway
@testable import ServiceTwins

/// What `WriteAllowanceStore` decides, the same in PostgreSQL (`auth.take_writes`) and in memory: each
/// subject's burst, one write back per interval, and the wait a refused write is told. The memory twin is
/// also what a replica counts in while it does not hear its database. Time is the moment each write is
/// given, from a clock the test moves.
@Suite struct WriteAllowanceStoreContractTests {
    static let policy = WriteLimit.Policy(burst: 3, interval: .seconds(10))

    static func subject(_ name: String, _ policy: WriteLimit.Policy = policy) -> [WriteLimit.Subject] {
        [WriteLimit.Subject(name: name, policy: policy)]
    }

    static func take(_ store: any WriteAllowanceStore, _ subjects: [WriteLimit.Subject], at clock: ManualClock) async throws -> WriteDecision {
        try await store.take(subjects, at: clock.now)
    }

    /// Takes `count` writes of the subjects, each let through.
    static func use(_ count: Int, of subjects: [WriteLimit.Subject], from store: any WriteAllowanceStore, at clock: ManualClock) async throws {
        for write in 0..<count {
            #expect(try await take(store, subjects, at: clock) == .allowed, "write \(write + 1) of \(count)")
        }
    }

    @Test(arguments: GatewayStoresKind.allCases)
    func aSubjectWritesItsBurstAtOnceAndTheNextIsToldToWaitAnInterval(_ kind: GatewayStoresKind) async throws {
        let clock = ManualClock()
        try await withGatewayStores(kind) { stores async throws in
            let student = Self.subject("account:1")
            try await Self.use(3, of: student, from: stores.writeAllowances, at: clock)
            #expect(try await Self.take(stores.writeAllowances, student, at: clock) == .wait(seconds: 10))
        }
    }

    @Test(arguments: GatewayStoresKind.allCases)
    func oneWriteComesBackPerInterval(_ kind: GatewayStoresKind) async throws {
        let clock = ManualClock()
        try await withGatewayStores(kind) { stores async throws in
            let student = Self.subject("account:1")
            try await Self.use(3, of: student, from: stores.writeAllowances, at: clock)
            clock.advance(by: .seconds(10))
            #expect(try await Self.take(stores.writeAllowances, student, at: clock) == .allowed)
            #expect(try await Self.take(stores.writeAllowances, student, at: clock) == .wait(seconds: 10))
            clock.advance(by: .seconds(9))
            #expect(try await Self.take(stores.writeAllowances, student, at: clock) == .wait(seconds: 1))
            clock.advance(by: .seconds(1))
            #expect(try await Self.take(stores.writeAllowances, student, at: clock) == .allowed)
        }
    }

    /// Were refused writes counted, a script that kept trying would hold its student back for ever.
    @Test(arguments: GatewayStoresKind.allCases)
    func aRefusedWriteIsNotCounted(_ kind: GatewayStoresKind) async throws {
        let clock = ManualClock()
        try await withGatewayStores(kind) { stores async throws in
            let student = Self.subject("account:1")
            try await Self.use(3, of: student, from: stores.writeAllowances, at: clock)
            for _ in 0..<5 {
                clock.advance(by: .seconds(1))
                #expect(try await Self.take(stores.writeAllowances, student, at: clock) != .allowed)
            }
            clock.advance(by: .seconds(5))
            #expect(try await Self.take(stores.writeAllowances, student, at: clock) == .allowed)
            #expect(try await Self.take(stores.writeAllowances, student, at: clock) == .wait(seconds: 10))
        }
    }

    /// An allowance is a bucket: time idle fills it up to the burst, and no further.
    @Test(arguments: GatewayStoresKind.allCases)
    func anIdleSubjectGetsItsWholeBurstBackButNoMore(_ kind: GatewayStoresKind) async throws {
        let clock = ManualClock()
        try await withGatewayStores(kind) { stores async throws in
            let student = Self.subject("account:1")
            try await Self.use(3, of: student, from: stores.writeAllowances, at: clock)
            clock.advance(by: .seconds(3600))
            try await Self.use(3, of: student, from: stores.writeAllowances, at: clock)
            #expect(try await Self.take(stores.writeAllowances, student, at: clock) == .wait(seconds: 10))
        }
    }

    @Test(arguments: GatewayStoresKind.allCases)
    func theWaitIsRoundedUpToWholeSecondsAndIsAtLeastOne(_ kind: GatewayStoresKind) async throws {
        let clock = ManualClock()
        try await withGatewayStores(kind) { stores async throws in
            let slow = Self.subject("address:203.0.113.7", WriteLimit.Policy(burst: 1, interval: .milliseconds(2_500)))
            let quick = Self.subject("account:1", WriteLimit.Policy(burst: 1, interval: .milliseconds(400)))
            #expect(try await Self.take(stores.writeAllowances, slow, at: clock) == .allowed)
            #expect(try await Self.take(stores.writeAllowances, quick, at: clock) == .allowed)
            #expect(try await Self.take(stores.writeAllowances, slow, at: clock) == .wait(seconds: 3))
            #expect(try await Self.take(stores.writeAllowances, quick, at: clock) == .wait(seconds: 1))
            clock.advance(by: .milliseconds(2_400))
            #expect(try await Self.take(stores.writeAllowances, slow, at: clock) == .wait(seconds: 1))
            clock.advance(by: .milliseconds(100))
            #expect(try await Self.take(stores.writeAllowances, slow, at: clock) == .allowed)
        }
    }

    @Test(arguments: GatewayStoresKind.allCases)
    func eachSubjectHasAnAllowanceOfItsOwn(_ kind: GatewayStoresKind) async throws {
        let clock = ManualClock()
        try await withGatewayStores(kind) { stores async throws in
            try await Self.use(3, of: Self.subject("account:1"), from: stores.writeAllowances, at: clock)
            try await Self.use(3, of: Self.subject("account:2"), from: stores.writeAllowances, at: clock)
            #expect(try await Self.take(stores.writeAllowances, Self.subject("account:2"), at: clock) == .wait(seconds: 10))
        }
    }

    /// A write counts against its account and its address; either with nothing left refuses it, and a refused
    /// write is charged to neither.
    @Test(arguments: GatewayStoresKind.allCases)
    func aWriteIsCountedAgainstEachOfItsSubjectsAndRefusedWhenAnyHasNoneLeft(_ kind: GatewayStoresKind) async throws {
        let clock = ManualClock()
        try await withGatewayStores(kind) { stores async throws in
            let address = Self.subject("address:203.0.113.7", WriteLimit.Policy(burst: 4, interval: .seconds(10)))
            let first = Self.subject("account:1")
            let second = Self.subject("account:2")
            try await Self.use(3, of: first + address, from: stores.writeAllowances, at: clock)
            #expect(try await Self.take(stores.writeAllowances, second + address, at: clock) == .allowed)
            #expect(try await Self.take(stores.writeAllowances, second + address, at: clock) == .wait(seconds: 10), "the address has none left")
            try await Self.use(2, of: second, from: stores.writeAllowances, at: clock)
            #expect(try await Self.take(stores.writeAllowances, second, at: clock) == .wait(seconds: 10))
        }
    }

    /// The write limit gives a client address four students' worth (a classroom behind one address): four
    /// times the burst, one back every quarter of the interval. The store keeps each subject to its policy.
    @Test(arguments: GatewayStoresKind.allCases)
    func aClientAddressHasFourTimesTheBurstAtAQuarterOfTheInterval(_ kind: GatewayStoresKind) async throws {
        let clock = ManualClock()
        try await withGatewayStores(kind) { stores async throws in
            let limit = WriteLimit(allowances: stores.writeAllowances, policy: .init(burst: 2, interval: .seconds(10)), clock: clock)
            for student in 1...4 {
                for _ in 0..<2 {
                    #expect(try await limit.take(limit.subjects(account: "\(student)", address: "203.0.113.7")) == .allowed)
                }
            }
            // 10 s / 4 = 2.5 s, told in whole seconds.
            #expect(try await limit.take(limit.subjects(account: "5", address: "203.0.113.7")) == .wait(seconds: 3))
            #expect(try await limit.take(limit.subjects(account: "5", address: "198.51.100.1")) == .allowed)
            clock.advance(by: .milliseconds(2_500))
            #expect(try await limit.take(limit.subjects(account: "6", address: "203.0.113.7")) == .allowed)
            #expect(try await limit.take(limit.subjects(account: "7", address: "203.0.113.7")) == .wait(seconds: 3))
        }
    }

    /// The retry of a write already made appended nothing: what it took is given back.
    @Test(arguments: GatewayStoresKind.allCases)
    func aWriteGivenBackCanBeWrittenAgain(_ kind: GatewayStoresKind) async throws {
        let clock = ManualClock()
        try await withGatewayStores(kind) { stores async throws in
            let student = Self.subject("account:1")
            try await Self.use(3, of: student, from: stores.writeAllowances, at: clock)
            try await stores.writeAllowances.giveBack(student)
            #expect(try await Self.take(stores.writeAllowances, student, at: clock) == .allowed)
            #expect(try await Self.take(stores.writeAllowances, student, at: clock) == .wait(seconds: 10))
        }
    }

    /// The gateway asks `decideAtOnce` first and `take` only when it has no answer: an answer at once has
    /// counted the write as a take would.
    @Test(arguments: GatewayStoresKind.allCases)
    func aWriteDecidedAtOnceIsCountedAsATakenOneIs(_ kind: GatewayStoresKind) async throws {
        let clock = ManualClock()
        try await withGatewayStores(kind) { stores async throws in
            let student = Self.subject("account:1")
            #expect(try await Self.decided(stores.writeAllowances, student, at: clock) == .allowed)
            #expect(try await Self.take(stores.writeAllowances, student, at: clock) == .allowed)
            #expect(try await Self.decided(stores.writeAllowances, student, at: clock) == .allowed)
            #expect(try await Self.take(stores.writeAllowances, student, at: clock) == .wait(seconds: 10))
            #expect(try await Self.decided(stores.writeAllowances, student, at: clock) == .wait(seconds: 10))
        }
    }

    /// As the gateway decides a write.
    static func decided(_ store: any WriteAllowanceStore, _ subjects: [WriteLimit.Subject], at clock: ManualClock) async throws -> WriteDecision {
        if let decided = store.decideAtOnce(subjects, at: clock.now) { return decided }
        return try await store.take(subjects, at: clock.now)
    }

    /// Checking and counting are one step: writes sent together are counted in turn.
    @Test(arguments: GatewayStoresKind.allCases)
    func writesSentTogetherAreCountedInTurn(_ kind: GatewayStoresKind) async throws {
        let clock = ManualClock()
        try await withGatewayStores(kind) { stores async throws in
            let allowances = stores.writeAllowances
            let student = Self.subject("account:1", WriteLimit.Policy(burst: 5, interval: .seconds(10)))
            let allowed = try await withThrowingTaskGroup(of: Bool.self) { group in
                for _ in 0..<20 {
                    group.addTask { try await Self.take(allowances, student, at: clock) == .allowed }
                }
                return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(allowed == 5)
        }
    }

    /// With a large burst, PostgreSQL's store takes several writes at once and lets the next through on them:
    /// the burst is still exact.
    @Test(arguments: GatewayStoresKind.allCases)
    func aLargeBurstIsLetThroughExactly(_ kind: GatewayStoresKind) async throws {
        let clock = ManualClock()
        try await withGatewayStores(kind) { stores async throws in
            let policy = WriteLimit.Policy(burst: 100, interval: .seconds(10))
            #expect(policy.leaseSize > 1, "the test must take several writes at once")
            let student = Self.subject("account:1", policy)
            try await Self.use(100, of: student, from: stores.writeAllowances, at: clock)
            #expect(try await Self.take(stores.writeAllowances, student, at: clock) == .wait(seconds: 10))
        }
    }

    /// A replica that does not hear its database counts in memory: students keep writing, still at the limit.
    @Test(arguments: GatewayStoresKind.allCases)
    func whileTheDatabaseIsNotHeardWritesAreStillLimited(_ kind: GatewayStoresKind) async throws {
        let clock = ManualClock()
        try await withGatewayStores(kind) { stores async throws in
            stores.writeAllowances.listeningChanged(false)
            let student = Self.subject("account:1")
            try await Self.use(3, of: student, from: stores.writeAllowances, at: clock)
            #expect(try await Self.take(stores.writeAllowances, student, at: clock) == .wait(seconds: 10))
            clock.advance(by: .seconds(10))
            #expect(try await Self.take(stores.writeAllowances, student, at: clock) == .allowed)
        }
    }

    /// The PostgreSQL store alone (the memory twin takes one write at a time): writes a replica took at once
    /// on a lease and did not use before the lease expired are given back, so a student who writes more
    /// slowly than leases last is counted once per write. Burst 32 makes leases of 2, and a lifetime of
    /// zero lets each expire with one write unused: without the give-back the 17th write would be refused.
    @Test func writesALeaseHeldWhenItExpiredAreGivenBack() async throws {
        let clock = ManualClock()
        let database = try await TestDatabase.create()
        try await withPostgresClient(try database.databaseURL, logger: TestDatabase.logger) { client in
            try await Migrations.migrator(client, logger: TestDatabase.logger).migrate()
            let store = PostgresWriteAllowanceStore(database: Database(client: client, logger: TestDatabase.logger), leaseLifetime: .zero)
            let student = Self.subject("account:1", WriteLimit.Policy(burst: 32, interval: .seconds(10)))
            #expect(student[0].policy.leaseSize == 2)
            try await Self.use(32, of: student, from: store, at: clock)
            #expect(try await Self.take(store, student, at: clock) == .wait(seconds: 10))
        }
    }
}
