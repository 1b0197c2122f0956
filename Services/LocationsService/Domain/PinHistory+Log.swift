import OnTheMapShared

extension PinHistory {
    /// The history of the pin whose stream is `events` (oldest first), each entry at the moment its change
    /// took effect (`RecordedEvent.moment`, as `?at=` reads the log); nil when there is none to show: no
    /// stream, a pin an operator has hidden (hidden, it is not found, as the pin itself is not), or an erased
    /// one (all that is left of it is the deletion in place of its events, so its stream does not begin with
    /// its post). Each change is told against the pin's state before it.
    init?(objectId: ObjectID, events: [RecordedEvent]) {
        guard events.first?.type == .posted, let last = events.last, last.type != .hidden else { return nil }
        var before: StudentLocation?
        var entries: [Entry] = []
        for event in events {
            switch (event.type, event.change) {
            case (.posted, .upserted(let location)):
                entries.append(Entry(event: .posted, at: event.moment, location: location))
                before = location
            case (.updated, .upserted(let location)), (.unhidden, .upserted(let location)):
                let (changes, moved) = before.map { Self.changes(from: $0, to: location) } ?? ([:], false)
                let kind: Event = event.type == .unhidden ? .unhidden : moved ? .moved : .edited
                entries.append(Entry(event: kind, at: event.moment, changes: changes))
                before = location
            case (.deleted, _):
                entries.append(Entry(event: .deleted, at: event.moment))
                before = nil
            case (.hidden, _):
                entries.append(Entry(event: .hidden, at: event.moment))
            default:
                continue
            }
        }
        self.init(objectId: objectId, results: entries)
    }
}
