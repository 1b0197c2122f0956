#if DEBUG
import Foundation
import OnTheMapShared
import Synchronization

@testable import LocationsService

/// The log and its read model in memory, for one process: each append is its own transaction, so every
/// event is readable by followers at once. Filters compare as PostgreSQL compares the columns (numbers as
/// numbers, times as instants); text compares by Unicode scalars, as the test cluster's C collation does, so
/// two spellings of one character (a composed "é", an "e" and a combining accent) are different text.
/// `LocationLogContractTests` holds it to what `PostgresLocationLog` answers.
final class MemoryLocationLog: LocationLog {
    private struct State {
        var events: [RecordedEvent] = []
        var pins: [ObjectID: ReadModel.Pin] = [:]
        /// By actor key, then idempotency key: the pin posted and its request's hash.
        var posted: [String: [String: (StudentLocation, String?)]] = [:]
        /// The last position taken (an erasure takes events out, so never the count of those left).
        var lastPosition: Int64 = 0
        /// The pins whose stream ends with a hide, as `locations.hidden_pins` keeps them.
        var hidden: Set<ObjectID> = []
        /// Each stream's last version: an id names one stream for good, even once its pin is deleted.
        var versions: [ObjectID: Int] = [:]
    }

    private let state = Mutex(State())
    /// As `locations.keep_pins_per_student` keeps it: a post past it takes the student's oldest pins off.
    let pinsPerStudent: Int

    init(pinsPerStudent: Int = PinCap.defaultPinsPerStudent) {
        self.pinsPerStudent = pinsPerStudent
    }

    /// Events appended so far.
    var eventCount: Int { state.withLock { $0.events.count } }

    func appendPosted(_ location: StudentLocation, metadata: EventMetadata) async throws -> LogPosition {
        try state.withLock { state in
            // Both refusals before anything is kept: a refused post takes nothing, not even its key.
            if let key = metadata.idempotencyKey, state.posted[metadata.actor.key]?[key] != nil {
                throw EventStore.AppendError.duplicateIdempotencyKey
            }
            guard state.versions[location.objectId] == nil else { throw EventStore.AppendError.versionConflict }
            if let key = metadata.idempotencyKey { state.posted[metadata.actor.key, default: [:]][key] = (location, metadata.requestHash) }
            state.pins[location.objectId] = ReadModel.Pin(location: location, version: 1, map: metadata.map)
            let position = Self.record(&state, .posted, version: 1, change: .upserted(location), map: metadata.map)
            // Oldest first, in the order `keep_pins_per_student` appends their deletions; never the pin just posted.
            let others = state.pins.values.filter {
                $0.location.uniqueKey == location.uniqueKey && $0.map == metadata.map && $0.location.objectId != location.objectId
            }
            .sorted { ($0.location.createdAt, $0.location.objectId.rawValue) < ($1.location.createdAt, $1.location.objectId.rawValue) }
            for pin in others.prefix(max(others.count + 1 - pinsPerStudent, 0)) {
                state.pins[pin.location.objectId] = nil
                let deletion = LocationDeleted(objectId: pin.location.objectId, uniqueKey: pin.location.uniqueKey, deletedAt: location.createdAt)
                _ = Self.record(&state, .deleted, version: pin.version + 1, change: .deleted(deletion), map: pin.map)
            }
            return position
        }
    }

    func appendUpdated(_ location: StudentLocation, expectedVersion: Int, metadata: EventMetadata) async throws -> LogPosition {
        try state.withLock { state in
            guard let pin = state.pins[location.objectId], pin.version == expectedVersion else { throw EventStore.AppendError.versionConflict }
            state.pins[location.objectId] = ReadModel.Pin(location: location, version: pin.version + 1, map: pin.map)
            return Self.record(&state, .updated, version: pin.version + 1, change: .upserted(location), map: pin.map)
        }
    }

    func appendDeleted(_ deletion: LocationDeleted, expectedVersion: Int, metadata: EventMetadata) async throws -> LogPosition {
        try state.withLock { state in
            guard let pin = state.pins[deletion.objectId], pin.version == expectedVersion else { throw EventStore.AppendError.versionConflict }
            state.pins[deletion.objectId] = nil
            return Self.record(&state, .deleted, version: pin.version + 1, change: .deleted(deletion), map: pin.map)
        }
    }

    func appendHidden(_ hidden: LocationHidden, expectedVersion: Int, metadata: EventMetadata) async throws -> LogPosition {
        try state.withLock { state in
            guard let pin = state.pins[hidden.objectId], pin.version == expectedVersion else { throw EventStore.AppendError.versionConflict }
            state.pins[hidden.objectId] = nil
            return Self.record(&state, .hidden, version: pin.version + 1, change: .deleted(hidden.removal), map: pin.map)
        }
    }

    func appendUnhidden(_ location: StudentLocation, expectedVersion: Int, metadata: EventMetadata) async throws -> LogPosition {
        try state.withLock { state in
            guard state.pins[location.objectId] == nil, state.versions[location.objectId] == expectedVersion else {
                throw EventStore.AppendError.versionConflict
            }
            state.pins[location.objectId] = ReadModel.Pin(location: location, version: expectedVersion + 1, map: metadata.map)
            return Self.record(&state, .unhidden, version: expectedVersion + 1, change: .upserted(location), map: metadata.map)
        }
    }

    func erase(student: String, at moment: Timestamp) async throws -> Int {
        state.withLock { state in
            var erased: [ObjectID: Int] = [:]
            var maps: [ObjectID: String] = [:]
            for event in state.events {
                maps[event.change.objectId] = event.map
                if case .upserted(let location) = event.change, location.uniqueKey == student { erased[location.objectId] = 0 }
            }
            for event in state.events where erased[event.change.objectId] != nil { erased[event.change.objectId] = event.streamVersion }
            state.events.removeAll { erased[$0.change.objectId] != nil }
            for (actor, keys) in state.posted {
                state.posted[actor] = keys.filter { erased[$0.value.0.objectId] == nil }
            }
            for (objectId, version) in erased.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
                state.pins[objectId] = nil
                let deletion = LocationDeleted(objectId: objectId, uniqueKey: "", deletedAt: moment)
                _ = Self.record(&state, .deleted, version: version + 1, change: .deleted(deletion), map: maps[objectId] ?? "")
            }
            return erased.count
        }
    }

    func stream(_ objectId: ObjectID) async throws -> [RecordedEvent] {
        state.withLock { state in state.events.filter { $0.change.objectId == objectId } }
    }

    private static func record(
        _ state: inout State, _ type: LocationEventType, version: Int, change: LocationChange, map: String
    ) -> LogPosition {
        state.lastPosition += 1
        let position = LogPosition(transactionId: state.lastPosition, position: state.lastPosition)
        state.events.append(
            RecordedEvent(position: position, type: type, streamVersion: version, change: change, recordedAt: .now(), map: map))
        state.versions[change.objectId] = version
        if type == .hidden { state.hidden.insert(change.objectId) } else { state.hidden.remove(change.objectId) }
        return position
    }

    func postedEvent(actorKey: String, idempotencyKey: String) async throws -> (location: StudentLocation, requestHash: String?)? {
        state.withLock { $0.posted[actorKey]?[idempotencyKey] }.map { (location: $0.0, requestHash: $0.1) }
    }

    func events(after position: LogPosition, limit: Int, map: String) async throws -> LogPage {
        state.withLock { state in
            let read = Array(state.events.lazy.filter { $0.position > position && $0.map == map }.prefix(limit))
            let hidden = state.hidden
            let shown = read.filter { $0.change.location == nil || !hidden.contains($0.change.objectId) }
            return LogPage(events: shown, readThrough: read.last?.position)
        }
    }

    /// (The memory log holds no maps' own lives: only their pins move them.)
    func classMapEvents(after position: LogPosition, limit: Int) async throws -> LogPage {
        state.withLock { state in
            let read = Array(state.events.lazy.filter { $0.position > position && !$0.map.isEmpty }.prefix(limit))
            let hidden = state.hidden
            let shown = read.filter { $0.change.location == nil || !hidden.contains($0.change.objectId) }
            var page = LogPage(events: shown, readThrough: read.last?.position)
            for event in read where !page.moved.contains(event.map) { page.moved.append(event.map) }
            return page
        }
    }

    func head() async throws -> LogPosition {
        state.withLock { $0.events.last?.position ?? .start }
    }

    func positionBefore(latest count: Int) async throws -> LogPosition? {
        state.withLock { $0.events.dropLast(count).last?.position }
    }

    func pin(_ objectId: ObjectID) async throws -> ReadModel.Pin? {
        state.withLock { $0.pins[objectId] }
    }

    func pins(_ query: PinQuery) async throws -> [StudentLocation] {
        let all = state.withLock { state in
            guard let at = query.at else { return Array(state.pins.values.filter { $0.map == query.map }.map(\.location)) }
            // The log folded up to the moment, as `locations.pin_versions` holds it.
            var fold = PinFold()
            for event in state.events where event.moment <= at && event.map == query.map { fold.apply(event) }
            return fold.rows.values.map(\.location).filter { !state.hidden.contains($0.objectId) }
        }
        var order = query.order
        if !order.contains(where: { $0.key == .objectId }) {
            order.append(PinQuery.Sort(key: .objectId, descending: query.order.first?.descending != false))
        }
        let matching = all.filter { location in query.filters.allSatisfy { Self.value(of: location, $0.key).equals($0.value) } }
        let sorted = matching.sorted { a, b in
            for sort in order {
                let (x, y) = (Self.value(of: a, sort.key), Self.value(of: b, sort.key))
                if x == y { continue }
                return sort.descending ? y < x : x < y
            }
            return false
        }
        return Array(sorted.dropFirst(query.skip).prefix(query.limit))
    }

    /// A column's value as PostgreSQL compares it.
    private enum Value: Comparable {
        case text(String)
        case number(Double)
        case instant(Timestamp)

        /// Whether a filter's text names this value, read as the column's type reads it.
        func equals(_ text: String) -> Bool {
            switch self {
            case .text(let value): value.unicodeScalars.elementsEqual(text.unicodeScalars)
            case .number(let value): Double(text) == value
            case .instant(let value): Timestamp(iso8601: text) == value
            }
        }

        /// Text by its scalars: Swift's `==` takes canonically equivalent strings as equal, PostgreSQL does not.
        static func == (lhs: Value, rhs: Value) -> Bool {
            switch (lhs, rhs) {
            case (.text(let a), .text(let b)): a.unicodeScalars.elementsEqual(b.unicodeScalars)
            case (.number(let a), .number(let b)): a == b
            case (.instant(let a), .instant(let b)): a == b
            default: false
            }
        }

        static func < (lhs: Value, rhs: Value) -> Bool {
            switch (lhs, rhs) {
            case (.text(let a), .text(let b)): a.unicodeScalars.lexicographicallyPrecedes(b.unicodeScalars)
            case (.number(let a), .number(let b)): a < b
            case (.instant(let a), .instant(let b)): a < b
            default: false
            }
        }
    }

    private static func value(of location: StudentLocation, _ key: PinQuery.Key) -> Value {
        switch key {
        case .objectId: .text(location.objectId.rawValue)
        case .uniqueKey: .text(location.uniqueKey)
        case .firstName: .text(location.firstName)
        case .lastName: .text(location.lastName)
        case .mapString: .text(location.mapString)
        case .mediaURL: .text(location.mediaURL)
        case .latitude: .number(location.latitude)
        case .longitude: .number(location.longitude)
        case .createdAt: .instant(location.createdAt)
        case .updatedAt: .instant(location.updatedAt)
        }
    }
}
#endif
