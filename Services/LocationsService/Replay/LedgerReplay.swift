import OnTheMapShared
import ServiceKit

/// `locations-service ledger apply`: after a restore, what the restore ledger records since shortly before
/// the restore point, done again in order through the same commands that did it first (see
/// `RestoreLedger`).
struct LedgerReplay: Sendable {
    /// What was done again: students erased (and their pins), hides and unhides, maps deleted, and records
    /// already in effect.
    struct Applied: Sendable, Equatable {
        var erased = 0, pins = 0, moderated = 0, mapsDeleted = 0, already = 0
    }

    let commands: LocationCommands
    let maps: MapStore
    var clock: any WallClock = SystemClock()

    /// Each record in turn. A refusal that says it is done already (hidden already, not hidden, the pin
    /// erased or deleted since, the map deleted already) counts as in effect.
    func apply(_ records: [RestoreLedger.Record]) async throws -> Applied {
        var counts = Applied()
        for record in records {
            let name = record.operatorName ?? "restore"
            let actor = Actor(key: OperatorTask.actorKey(name), firstName: name, lastName: "")
            let context = LocationCommands.Context(actor: actor, userAgent: "locations-service ledger apply", map: nil)
            do {
                switch record.kind {
                case .erased:
                    guard let key = record.account else { continue }
                    let student = Actor(key: key, firstName: "", lastName: "")
                    counts.pins += try await commands.erase(context: LocationCommands.Context(actor: student, userAgent: context.userAgent))
                    counts.erased += 1
                case .hidden:
                    guard let pin = record.pin else { continue }
                    _ = try await commands.hide(ObjectID(pin), reason: record.reason ?? "hidden again after a restore", context: context)
                    counts.moderated += 1
                case .unhidden:
                    guard let pin = record.pin else { continue }
                    _ = try await commands.unhide(ObjectID(pin), context: context)
                    counts.moderated += 1
                case .mapDeleted:
                    guard let slug = record.map.flatMap({ MapSlug($0) }) else { continue }
                    let metadata = EventMetadata(actor: actor, userAgent: context.userAgent, map: slug.rawValue)
                    if try await maps.delete(slug, at: clock.now, metadata: metadata) == nil {
                        counts.already += 1
                    } else {
                        counts.mapsDeleted += 1
                    }
                case .disabled, .enabled:
                    continue
                }
            } catch is ModerationError {
                counts.already += 1
            }
        }
        return counts
    }
}
