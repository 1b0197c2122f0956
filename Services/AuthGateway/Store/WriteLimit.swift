import ServiceKit

/// Keeps one student (or one script with a session) from flooding the map: each account may post, change
/// or delete `burst` pins at once, then one per `interval`; each client address four times as many (a
/// classroom behind one address is several students). A write is counted before it is forwarded, so writes
/// sent in parallel cannot outrun the limit; the retry of a write already made (the service answered it
/// from its idempotency key) is given back.
struct WriteLimit: Sendable {
    struct Policy: Sendable, Hashable {
        /// `WRITE_BURST`.
        var burst = 5
        /// `WRITE_INTERVAL`.
        var interval: Duration = .seconds(10)

        var intervalMilliseconds: Int64 {
            interval.components.seconds * 1000 + interval.components.attoseconds / 1_000_000_000_000_000
        }

        /// How many writes a replica takes at once from the shared count: one while the burst is small (each
        /// write is then decided alone, exactly), more for large bursts, so a replica asks the database once
        /// for many writes (at most a sixteenth of the burst, and 64).
        var leaseSize: Int { max(1, min(64, burst / 16)) }

        /// A client address's share: as many students' worth as `addressShare` says.
        var perAddress: Policy { Policy(burst: burst * WriteLimit.addressShare, interval: interval / WriteLimit.addressShare) }
    }

    /// What one write is counted against, with its own allowance.
    struct Subject: Sendable, Hashable {
        let name: String
        let policy: Policy
    }

    static let addressShare = 4

    let allowances: any WriteAllowanceStore
    let policy: Policy
    let clock: any WallClock

    /// The subjects a write counts against: its account, and its client's address when known.
    func subjects(account: String, address: String?) -> [Subject] {
        [Subject(name: Self.accountSubject(account), policy: policy)]
            + (address.map { [Subject(name: "address:" + $0, policy: policy.perAddress)] } ?? [])
    }

    /// The name an account's writes are counted under (`auth.erase_account` deletes it by this name too).
    static func accountSubject(_ accountKey: String) -> String { "account:" + accountKey }

    /// The decision on the write when it can be made without waiting (see `WriteAllowanceStore.decideAtOnce`).
    func decideAtOnce(_ subjects: [Subject]) -> WriteDecision? {
        allowances.decideAtOnce(subjects, at: clock.now)
    }

    /// Counts the write, or answers the seconds to wait before the next one is let through.
    func take(_ subjects: [Subject]) async throws -> WriteDecision {
        try await allowances.take(subjects, at: clock.now)
    }

    func giveBack(_ subjects: [Subject]) async throws {
        try await allowances.giveBack(subjects)
    }
}
