import OnTheMapShared
import ServiceKit
import Synchronization

/// The newest 100 pins of each class map read lately, as ready-to-send JSON with a strong ETag: at most
/// `capacity` maps (`MAP_CACHE_SIZE`), the least recently read one dropped first, so memory stays bounded
/// however many maps are read in turn.
///
/// Any change to the log makes every cached list stale (as for the default map's `LatestLocationsCache`,
/// whose coherence it shares: while change notifications are not arriving, nothing cached is trusted); a
/// map's next read builds its list again, once, however many readers wait for it.
final class MapListCaches: Sendable {
    private struct Entry {
        var generation: UInt64
        var list: CachedJSON
        var lastRead: UInt64
    }

    private struct State {
        var generation: UInt64 = 0
        var coherent = false
        var entries: [String: Entry] = [:]
        /// Builds under way, by map: a reader that finds one waits for it rather than starting another.
        var building: [String: (generation: UInt64, task: Task<CachedJSON, any Error>)] = [:]
        var clock: UInt64 = 0
    }

    let capacity: Int
    private let state = Mutex(State())
    private let load: @Sendable (String) async throws -> [StudentLocation]

    init(capacity: Int, load: @escaping @Sendable (String) async throws -> [StudentLocation]) {
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

    /// How many maps' lists are held.
    var count: Int { state.withLock { $0.entries.count } }

    /// The map's list as of now: the cached one if it is fresh, else the one the next build makes.
    func current(_ map: String) async throws -> CachedJSON {
        let (fresh, task): (CachedJSON?, Task<CachedJSON, any Error>?) = state.withLock { state in
            state.clock &+= 1
            if state.coherent, var entry = state.entries[map], entry.generation == state.generation {
                entry.lastRead = state.clock
                state.entries[map] = entry
                return (entry.list, nil)
            }
            if let building = state.building[map], building.generation == state.generation { return (nil, building.task) }
            let generation = state.generation
            let task = Task { [load] in CachedJSON(tagging: StudentLocationList(results: try await load(map)).json) }
            state.building[map] = (generation, task)
            return (nil, task)
        }
        if let fresh { return fresh }
        guard let task else { preconditionFailure("a read finds either a list or a build") }
        let result = await task.result
        state.withLock { state in
            guard let building = state.building[map], building.task == task else { return }
            state.building[map] = nil
            if case .success(let list) = result { store(list, for: map, generation: building.generation, in: &state) }
        }
        return try result.get()
    }

    private func store(_ list: CachedJSON, for map: String, generation: UInt64, in state: inout State) {
        state.entries[map] = Entry(generation: generation, list: list, lastRead: state.clock)
        guard state.entries.count > capacity else { return }
        // The least recently read goes: one pass, rare (only when a new map's list comes in over the cap).
        if let oldest = state.entries.min(by: { $0.value.lastRead < $1.value.lastRead })?.key { state.entries[oldest] = nil }
    }
}
