import OnTheMapShared
import PostgresNIO
import ServiceKit
import Synchronization

/// What the write limit says of one write.
enum WriteDecision: Sendable, Equatable {
    /// Let through, and counted against each of its subjects.
    case allowed
    /// Refused, and counted against none: one of its subjects has a write again in this many seconds (at least 1).
    case wait(seconds: Int)
}

/// How many writes each subject (an account, a client address) may make, as a token bucket: its policy's
/// `burst` at once, then one per `interval`. `PostgresWriteAllowanceStore` is the gateway's, shared by every replica;
/// `MemoryWriteAllowanceStore` holds the same in memory: for router-level tests of what is decided above it, and
/// for a replica that does not hear its database.
protocol WriteAllowanceStore: Sendable {
    /// The decision on one write, when it can be made without waiting for anything (a write this replica has
    /// counted already, or a count held in memory); nil when `take` has to ask.
    func decideAtOnce(_ subjects: [WriteLimit.Subject], at moment: Timestamp) -> WriteDecision?
    /// Lets one write through and counts it against each of its subjects at `moment`, unless one of them has
    /// no write left. Checking and counting are one step, so writes sent in parallel, from any replica, are
    /// counted in turn.
    func take(_ subjects: [WriteLimit.Subject], at moment: Timestamp) async throws -> WriteDecision
    /// Gives back a write `take` counted that turned out to append nothing (the retry of a write already made).
    func giveBack(_ subjects: [WriteLimit.Subject]) async throws
    /// Whether this replica hears its database (its `LISTEN` connection is up); told when it changes.
    func listeningChanged(_ listening: Bool)
}

/// `auth.write_allowances`, decided by `auth.take_writes`. Writes that arrive while a batch is being
/// decided wait and go together in the next one, as one statement: under load one round trip to the
/// database decides many writes, and a lone write waits for nothing. Where a policy's burst is large
/// (`WriteLimit.Policy.leaseSize`), a write takes several of its subjects' writes at once and this replica
/// lets the next writes of the same subjects through on those, for `leaseLifetime`, without asking again:
/// every write is still counted in the database before it is let through, so the replicas together never
/// let through more than the limit. What a lease holds when it expires is given back before the next batch
/// is decided, so a student who writes more slowly than leases last is counted once per write, not once
/// per lease.
///
/// While this replica does not hear its database (its `LISTEN` connection is lost), it counts on its own, in
/// memory: students whose sessions this replica holds keep writing through an outage of the gateway's
/// database, at the limit (each replica its own). A database that is there but slow to answer is not an
/// outage: the write waits for it, or is answered 503 at the request path's deadline, and never lets
/// through more than the limit.
final class PostgresWriteAllowanceStore: WriteAllowanceStore {
    private struct Asking {
        let subjects: [WriteLimit.Subject]
        let moment: Timestamp
        let continuation: CheckedContinuation<Answer, any Error>
    }

    /// What a write that asked the database is told.
    private enum Answer {
        case decided(WriteDecision)
        /// This replica stopped hearing its database meanwhile: the write is decided in memory.
        case notHeard
    }

    private struct State {
        var listening = true
        /// Writes counted and not yet let through, by the subjects they were counted against.
        var leases: [[String]: Lease] = [:]

        /// Lets one write of `subjects` through on a lease, if one holds a write for them.
        mutating func leased(_ subjects: [WriteLimit.Subject]) -> Bool {
            let names = subjects.map(\.name)
            guard let lease = leases[names], lease.remaining > 0, lease.until > .now else { return false }
            leases[names]?.remaining -= 1
            return true
        }
    }

    private struct Lease {
        let subjects: [WriteLimit.Subject]
        var remaining: Int
        let until: ContinuousClock.Instant
    }

    private let database: Database
    /// How long this replica lets writes through on a lease before it asks again.
    private let leaseLifetime: Duration
    private let local = MemoryWriteAllowanceStore()
    private let state = Mutex(State())
    /// One batch at a time: what arrives while it is decided goes in the next.
    private let batches = Batches<Asking>(slots: 1)

    init(database: Database, leaseLifetime: Duration = .seconds(1)) {
        self.database = database
        self.leaseLifetime = leaseLifetime
    }

    func listeningChanged(_ listening: Bool) {
        state.withLock { $0.listening = listening }
    }

    func decideAtOnce(_ subjects: [WriteLimit.Subject], at moment: Timestamp) -> WriteDecision? {
        let (listening, leased) = state.withLock { state in (state.listening, state.listening && state.leased(subjects)) }
        if !listening { return local.decide(subjects, at: moment) }
        return leased ? .allowed : nil
    }

    func take(_ subjects: [WriteLimit.Subject], at moment: Timestamp) async throws -> WriteDecision {
        if let decided = decideAtOnce(subjects, at: moment) { return decided }
        let answer: Answer = try await withCheckedThrowingContinuation { continuation in
            // Never refused: the batches are not stopped, a write that outlives the database fails with it.
            _ = batches.submit(Asking(subjects: subjects, moment: moment, continuation: continuation)) { await self.decide($0) }
        }
        switch answer {
        case .decided(let decision): return decision
        case .notHeard: return local.decide(subjects, at: moment)
        }
    }

    func giveBack(_ subjects: [WriteLimit.Subject]) async throws {
        try await giveBack([(subjects, 1)])
    }

    /// Gives back `writes` writes counted against each of the subjects, in one statement (a subject named
    /// more than once gets back the sum).
    private func giveBack(_ given: [(subjects: [WriteLimit.Subject], writes: Int)]) async throws {
        let subjects = given.flatMap { entry in entry.subjects.map { ($0, entry.writes) } }
        _ = try await database.write(
            """
            UPDATE auth.write_allowances SET next_at = next_at - make_interval(secs => given.ms / 1000.0)
            FROM (
                SELECT subject, sum(interval_ms * writes) AS ms
                FROM unnest(\(subjects.map(\.0.name))::text[], \(subjects.map(\.0.policy.intervalMilliseconds))::bigint[],
                            \(subjects.map { Int64($0.1) })::bigint[]) AS each (subject, interval_ms, writes)
                GROUP BY subject
            ) AS given
            WHERE write_allowances.subject = given.subject
            """)
    }

    /// Decides one batch: a write that waited while the batch before took a lease for its subjects goes
    /// through on that lease without asking again, the others in one statement, at the newest moment of
    /// the batch (which no write of it was asked after).
    private func decide(_ waiting: [Asking]) async {
        let (listening, leased, batch, unused) = state.withLock { state in
            guard state.listening else { return (false, [Asking](), waiting, [Lease]()) }
            let now = ContinuousClock.now
            let expired = state.leases.filter { $0.value.until <= now }
            for names in expired.keys { state.leases[names] = nil }
            var leased: [Asking] = []
            var batch: [Asking] = []
            for asking in waiting {
                if state.leased(asking.subjects) { leased.append(asking) } else { batch.append(asking) }
            }
            return (true, leased, batch, expired.values.filter { $0.remaining > 0 })
        }
        guard listening else {
            for asking in waiting { asking.continuation.resume(returning: .notHeard) }
            return
        }
        for asking in leased { asking.continuation.resume(returning: .decided(.allowed)) }
        // Before the batch asks: its writes may need what an expired lease held. Should the database not take
        // it back, those writes stay counted, which lets through fewer writes than the limit, never more.
        if !unused.isEmpty { try? await giveBack(unused.map { ($0.subjects, $0.remaining) }) }
        guard let moment = batch.map(\.moment).max() else { return }
        await decide(batch, at: moment)
    }

    private func decide(_ batch: [Asking], at moment: Timestamp) async {
        let subjects = batch.flatMap(\.subjects)
        let numbers = batch.enumerated().flatMap { number, asking in Array(repeating: Int32(number), count: asking.subjects.count) }
        // The first write of its subjects in the batch asks for a lease; the others for themselves.
        var asked = Set<[String]>()
        let wants = batch.flatMap { asking in
            let want = asked.insert(asking.subjects.map(\.name)).inserted ? asking.subjects.map(\.policy.leaseSize).min() ?? 1 : 1
            return Array(repeating: Int32(want), count: asking.subjects.count)
        }
        do {
            let rows = try await database.write(
                """
                SELECT auth.take_writes(
                    \(subjects.map(\.name))::text[], \(numbers)::integer[], \(subjects.map { Int32($0.policy.burst) })::integer[],
                    \(subjects.map(\.policy.intervalMilliseconds))::bigint[], \(wants)::integer[], \(moment.iso8601)::timestamptz)
                """)
            let answers = try rows.first?.decode([Int32].self) ?? []
            guard answers.count == batch.count else { throw PostgresWriteAllowanceMissing() }
            let leased = zip(batch, answers).filter { $1 > 1 }.map { ($0.subjects, Int($1) - 1) }
            if !leased.isEmpty {
                // A lease these replace was used up or expired: the batch's start gave back what an expired one held.
                let until = ContinuousClock.now + leaseLifetime
                state.withLock { state in
                    for (subjects, remaining) in leased {
                        state.leases[subjects.map(\.name)] = Lease(subjects: subjects, remaining: remaining, until: until)
                    }
                }
            }
            for (asking, answer) in zip(batch, answers) {
                asking.continuation.resume(returning: .decided(answer > 0 ? .allowed : .wait(seconds: Int(-answer))))
            }
        } catch {
            for asking in batch { asking.continuation.resume(throwing: error) }
        }
    }
}

struct PostgresWriteAllowanceMissing: Error {}

/// The write allowances in memory, for one process, decided as `auth.take_writes` decides them. It is part
/// of the gateway, not only of its tests: `PostgresWriteAllowanceStore` counts in one of these while its
/// replica does not hear the database, so students keep writing through an outage, still at the limit.
final class MemoryWriteAllowanceStore: WriteAllowanceStore {
    /// When each subject may next write with its whole burst used, in milliseconds since 1970.
    private let nextAt = Mutex([String: Int64]())

    init() {}

    /// Counts the write, or says how long to wait, at once: nothing here waits.
    func decide(_ subjects: [WriteLimit.Subject], at moment: Timestamp) -> WriteDecision {
        let now = moment.millisecondsSince1970
        return nextAt.withLock { nextAt in
            let waits = subjects.compactMap { subject in
                nextAt[subject.name].map { $0 - Int64(subject.policy.burst - 1) * subject.policy.intervalMilliseconds - now }
            }
            if let longest = waits.filter({ $0 > 0 }).max() { return .wait(seconds: max(1, Int((longest + 999) / 1000))) }
            for subject in subjects {
                nextAt[subject.name] = max(nextAt[subject.name] ?? now, now) + subject.policy.intervalMilliseconds
            }
            return .allowed
        }
    }

    func decideAtOnce(_ subjects: [WriteLimit.Subject], at moment: Timestamp) -> WriteDecision? {
        decide(subjects, at: moment)
    }

    func take(_ subjects: [WriteLimit.Subject], at moment: Timestamp) async throws -> WriteDecision {
        decide(subjects, at: moment)
    }

    /// Nothing to hear: one process is all there is.
    func listeningChanged(_ listening: Bool) {}

    func giveBack(_ subjects: [WriteLimit.Subject]) async throws {
        nextAt.withLock { nextAt in
            for subject in subjects { nextAt[subject.name]? -= subject.policy.intervalMilliseconds }
        }
    }

    /// An erased account's counts gone, on every map, their whole bursts back.
    func forget(account key: String) {
        let subject = WriteLimit.accountSubject(key)
        nextAt.withLock { nextAt in
            nextAt = nextAt.filter { name, _ in name != subject && !name.hasPrefix(subject + "@") }
        }
    }
}
