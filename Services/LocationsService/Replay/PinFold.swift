import OnTheMapShared

/// The read model's rule, applied in memory: each `LocationPosted`, `LocationUpdated` or `LocationUnhidden`
/// carries the pin's whole state, so the last event of a stream decides it; `LocationDeleted` and
/// `LocationHidden` remove it (`RecordedEvent` reads the one kind as an upsert, the other as a removal).
///
/// The projection rule (the last posted, updated or unhidden event of a stream decides its pin; a deletion
/// or a hide removes it)
/// is written three times: in `EventStore`'s appends (SQL, in the append's own statement), in `Replayer`'s
/// rebuild (SQL, one pass over the log) and here (in memory, for the catch-up); each is where it costs least.
/// `ReplayTests` holds the three together: the rebuild of 10,000 random live appends must equal the live
/// table, and a replay during writes must fold what arrived meanwhile into the same.
struct PinFold {
    struct Row {
        var location: StudentLocation
        var version: Int
        var map: String
    }

    private(set) var rows: [String: Row] = [:]
    /// Pins deleted by the folded events; only meaningful when folding on top of an existing table.
    private(set) var deletions: Set<String> = []

    mutating func apply(_ event: RecordedEvent) {
        switch event.change {
        case .upserted(let location):
            rows[location.objectId.rawValue] = Row(location: location, version: event.streamVersion, map: event.map)
            deletions.remove(location.objectId.rawValue)
        case .deleted(let deletion):
            rows[deletion.objectId.rawValue] = nil
            deletions.insert(deletion.objectId.rawValue)
        }
    }

    var isEmpty: Bool { rows.isEmpty && deletions.isEmpty }
}
