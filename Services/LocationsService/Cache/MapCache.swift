import OnTheMapShared
import ServiceKit
import Synchronization

/// What is read of class maps on every request, kept in memory: each map's newest 100 pins as
/// ready-to-send JSON (`MapListCaches`), and who may do what on each (`MapAccessCache`). At most `capacity`
/// entries (`MAP_CACHE_SIZE` maps), the least recently read dropped first, so memory stays bounded however
/// many maps are read in turn.
///
/// Any change to the log makes every entry stale (as for the default map's `LatestLocationsCache`, whose
/// coherence it shares: while change notifications are not arriving, nothing cached is trusted); the next
/// read of a key loads it again, once, however many readers wait for it.
final class MapCache<Value: Sendable>: Sendable {
    private struct Entry {
        var generation: UInt64
        var value: Value
        var lastRead: UInt64
    }

    private struct State {
        var generation: UInt64 = 0
        var coherent = false
        var entries: [String: Entry] = [:]
        /// Builds under way, by map: a reader that finds one waits for it rather than starting another.
        var building: [String: (generation: UInt64, task: Task<Value, any Error>)] = [:]
        var clock: UInt64 = 0
    }

    let capacity: Int
    private let state = Mutex(State())
    private let load: @Sendable (String) async throws -> Value

    init(capacity: Int, load: @escaping @Sendable (String) async throws -> Value) {
        self.capacity = max(capacity, 1)
        self.load = load
    }

    func invalidate() {
        state.withLock { $0.generation &+= 1 }
    }

    func setCoherent(_ coherent: Bool) {
        state.withLock {
            $0.coherent = coherent
            $0.generation &+= 1
        }
    }

    /// How many entries are held.
    var count: Int { state.withLock { $0.entries.count } }

    /// The cached value if it is fresh now, without waiting for anything (nil otherwise): for the answers
    /// made before the router, on the connection's event loop.
    func fresh(_ key: String) -> Value? {
        state.withLock { state in
            // One lookup finds the entry and marks it read.
            guard state.coherent, let index = state.entries.index(forKey: key), state.entries.values[index].generation == state.generation
            else { return nil }
            state.clock &+= 1
            state.entries.values[index].lastRead = state.clock
            return state.entries.values[index].value
        }
    }

    /// The value as of now: the cached one if it is fresh, else the one the next load makes.
    func current(_ key: String) async throws -> Value {
        let (fresh, task): (Value?, Task<Value, any Error>?) = state.withLock { state in
            state.clock &+= 1
            if state.coherent, var entry = state.entries[key], entry.generation == state.generation {
                entry.lastRead = state.clock
                state.entries[key] = entry
                return (entry.value, nil)
            }
            if let building = state.building[key], building.generation == state.generation { return (nil, building.task) }
            let generation = state.generation
            let task = Task { [load] in try await load(key) }
            state.building[key] = (generation, task)
            return (nil, task)
        }
        if let fresh { return fresh }
        guard let task else { preconditionFailure("a read finds either a value or a load") }
        let result = await task.result
        state.withLock { state in
            guard let building = state.building[key], building.task == task else { return }
            state.building[key] = nil
            if case .success(let value) = result { store(value, for: key, generation: building.generation, in: &state) }
        }
        return try result.get()
    }

    private func store(_ value: Value, for key: String, generation: UInt64, in state: inout State) {
        state.entries[key] = Entry(generation: generation, value: value, lastRead: state.clock)
        guard state.entries.count > capacity else { return }
        // The least recently read goes: one pass, rare (only when a new key comes in over the cap).
        if let oldest = state.entries.min(by: { $0.value.lastRead < $1.value.lastRead })?.key { state.entries[oldest] = nil }
    }
}

/// Each class map's newest 100 pins, by slug.
typealias MapListCaches = MapCache<CachedJSON>

/// Each caller's access to each class map, by slug and account key: read on every request to a map.
typealias MapAccessCache = MapCache<KnownAccess>

/// What the access cache knows of one caller on one slug: that no map has it (none was made, or it was
/// deleted), or the caller's access to the map.
enum KnownAccess: Sendable {
    case noSuchMap
    case access(MapAccess)

    init(_ access: MapAccess?) {
        self = access.map(Self.access) ?? .noSuchMap
    }

    var access: MapAccess? {
        guard case .access(let access) = self else { return nil }
        return access
    }
}
