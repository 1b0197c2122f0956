import OnTheMapShared
import ServiceKit
import Synchronization

/// The gateway's copy of class maps' hot reads (each map's newest 100 pins, as locations-service encoded
/// them), so a class's most common request is answered before the router and without a hop, as the default
/// map's is (`LatestListCache`). With each list, who may be given it: anyone, for a public map; for a
/// members-only map (its answers `Cache-Control: private`), the accounts the service has already given it
/// to, each read again from its session on the event loop.
///
/// Trusted only while the class maps' feed follows the log (`MapFeeds`): a map's entry goes when the feed
/// reports the map moved (a pin, or its own life: settings, members, roles, deletion) and when a change to
/// it passes through this gateway. At most `capacity` maps (`MAP_CACHE_SIZE`), the least recently read
/// dropped first, so memory stays bounded however many maps are read in turn.
final class ClassMapLists: Sendable {
    /// Who may be given a map's list.
    enum Readers: Sendable, Equatable {
        case anyone
        case accounts(Set<String>)
    }

    private struct Entry {
        var list: CachedJSON
        var readers: Readers
        var lastRead: UInt64
    }

    private struct State {
        /// By slug (`MapSlug.rawValue`).
        var entries: [String: Entry] = [:]
        /// Invalidations, counted in buckets by slug: a list fetched while its bucket's count moved may be
        /// stale, and is not kept. (A bucket is shared by a few maps; a list not kept only costs a fetch.)
        var stamps = [UInt64](repeating: 0, count: ClassMapLists.buckets)
        var following = false
        var clock: UInt64 = 0
    }

    static let buckets = 256
    let capacity: Int
    private let state = Mutex(State())

    init(capacity: Int) {
        self.capacity = max(capacity, 1)
    }

    /// The map's list, for a reader the entry admits (`account`: the caller's account key, worked out only
    /// for a members-only map); nil when not held, not trusted now, or not for this caller.
    /// `slug` as the path spells it: only slugs (`MapSlug`) are ever kept, so any other spelling finds nothing.
    func list(for slug: String, account: () -> String?) -> CachedJSON? {
        let held: (CachedJSON, Readers)? = state.withLock { state in
            // One lookup finds the entry and marks it read.
            guard state.following, let index = state.entries.index(forKey: slug) else { return nil }
            state.clock &+= 1
            state.entries.values[index].lastRead = state.clock
            let entry = state.entries.values[index]
            return (entry.list, entry.readers)
        }
        guard let (list, readers) = held else { return nil }
        // The caller's session is looked up (its token hashed) outside the lock, and only for a members-only map.
        if case .accounts(let keys) = readers {
            guard let key = account(), keys.contains(key) else { return nil }
        }
        return list
    }

    /// What to pass to `store` after fetching the map's list, so a fetch that raced a change is not kept.
    func stamp(for slug: MapSlug) -> UInt64 {
        state.withLock { $0.stamps[Self.bucket(slug)] }
    }

    /// Keeps a list the service gave, for `readers`: `.anyone` for a public map's, the caller's account for a
    /// members-only map's, which then joins the accounts already given the same list.
    func store(_ list: CachedJSON, for slug: MapSlug, readers: Readers, fetchedAt stamp: UInt64) {
        state.withLock { state in
            guard state.following, state.stamps[Self.bucket(slug)] == stamp else { return }
            state.clock &+= 1
            var kept = readers
            if case .accounts(let new) = readers, let entry = state.entries[slug.rawValue], entry.list.etag == list.etag,
                case .accounts(let known) = entry.readers
            {
                kept = .accounts(known.union(new))
            }
            state.entries[slug.rawValue] = Entry(list: list, readers: kept, lastRead: state.clock)
            guard state.entries.count > capacity else { return }
            // The least recently read goes: one pass, only when a map comes in over the cap.
            if let oldest = state.entries.min(by: { $0.value.lastRead < $1.value.lastRead })?.key { state.entries[oldest] = nil }
        }
    }

    /// The map moved: its list, and who may read it, are asked of the service again.
    func invalidate(_ slug: MapSlug) {
        state.withLock { state in
            state.stamps[Self.bucket(slug)] &+= 1
            state.entries[slug.rawValue] = nil
        }
    }

    /// Whether the class maps' feed follows the log. Any change of it drops every entry: what was held may
    /// have missed changes.
    func setFollowing(_ following: Bool) {
        state.withLock { state in
            guard state.following != following else { return }
            state.following = following
            state.entries = [:]
            for index in state.stamps.indices { state.stamps[index] &+= 1 }
        }
    }

    private static func bucket(_ slug: MapSlug) -> Int {
        var hash: UInt32 = 2_166_136_261
        for byte in slug.rawValue.utf8 { hash = (hash ^ UInt32(byte)) &* 16_777_619 }
        return Int(hash % UInt32(buckets))
    }
}
