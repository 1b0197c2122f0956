import OnTheMapShared
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

    /// The subjects a write counts against: its account on the map it is on (`map`, nil for the default map),
    /// and its client's address when known, on every map at once (a school's address posts for all its
    /// classes, and one address must not write without bound by spreading over many maps).
    func subjects(account: String, address: String?, map: MapSlug? = nil) -> [Subject] {
        [Subject(name: Self.accountSubject(account, map: map), policy: policy)]
            + (address.map { [Subject(name: "address:" + $0, policy: policy.perAddress)] } ?? [])
    }

    /// The name an account's writes on a map are counted under: `account:{key}` on the default map,
    /// `account:{key}@{slug}` on a class map, so a student's posts on one class's map leave their allowance
    /// on another's whole. An erasure deletes them all (`auth.erase_account`, `forget(account:)`).
    static func accountSubject(_ accountKey: String, map: MapSlug? = nil) -> String {
        "account:" + accountKey + (map.map { "@" + $0.rawValue } ?? "")
    }

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
