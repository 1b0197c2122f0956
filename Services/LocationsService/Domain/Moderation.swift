import OnTheMapShared

/// Why an operator's hide or unhide was refused.
enum ModerationError: Error, Equatable, CustomStringConvertible {
    case noSuchPin(ObjectID)
    case alreadyHidden(ObjectID)
    case notHidden(ObjectID)
    case deleted(ObjectID)
    case invalidReason(String)

    var description: String {
        switch self {
        case .noSuchPin(let id): "no pin \(id) was ever posted"
        case .alreadyHidden(let id): "pin \(id) is hidden already; `moderate unhide \(id)` brings it back"
        case .notHidden(let id): "pin \(id) is not hidden"
        case .deleted(let id): "pin \(id) was deleted by its owner; there is nothing to hide or bring back"
        case .invalidReason(let message): message
        }
    }
}

/// An operator's moderation: each is one event in the pin's stream, with the operator as its actor, so
/// the read model, replay and every follower of the log see it as they see the owner's changes.
extension LocationCommands {
    static let maximumReasonLength = 500

    /// `LocationHidden`: the pin leaves the map for `reason`; its owner can no longer change it (it is not
    /// there) until an unhide.
    func hide(_ objectId: ObjectID, reason: String, context: Context) async throws -> LocationHidden {
        let reason = reason.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !reason.isEmpty else { throw ModerationError.invalidReason("say why with --reason; it is kept in the log") }
        guard reason.count <= Self.maximumReasonLength else {
            throw ModerationError.invalidReason("the reason must be at most \(Self.maximumReasonLength) characters")
        }
        do {
            try Validation.printable(reason, field: "the reason")
        } catch {
            throw ModerationError.invalidReason("the reason must not contain control characters")
        }
        return try await againOnConflict {
            guard let pin = try await pin(objectId, on: context.map) else {
                throw try await whyAbsent(objectId, on: context.map)
            }
            let hidden = LocationHidden(
                objectId: objectId, uniqueKey: pin.location.uniqueKey, reason: reason, hiddenAt: max(clock.now, pin.location.updatedAt))
            _ = try await log.appendHidden(hidden, expectedVersion: pin.version, metadata: context.metadata(for: pin))
            return hidden
        }
    }

    /// `LocationUnhidden`: a hidden pin comes back as it was hidden.
    func unhide(_ objectId: ObjectID, context: Context) async throws -> StudentLocation {
        try await againOnConflict {
            let events = objectId.isWellFormed ? try await log.stream(objectId) : []
            guard let last = events.last, context.map == nil || last.map == context.map else { throw ModerationError.noSuchPin(objectId) }
            switch last.type {
            case .hidden: break
            case .deleted: throw ModerationError.deleted(objectId)
            case .posted, .updated, .unhidden: throw ModerationError.notHidden(objectId)
            }
            // The pin as it was hidden: the last event that carried its whole state.
            guard let location = events.lazy.reversed().compactMap(\.change.location).first else {
                throw ModerationError.noSuchPin(objectId)
            }
            var metadata = context.metadata
            metadata.map = last.map
            _ = try await log.appendUnhidden(location, expectedVersion: last.streamVersion, metadata: metadata)
            return location
        }
    }

    private func againOnConflict<T>(_ attempt: () async throws -> T) async throws -> T {
        try await appendingAgainOnConflict(didAppend: didAppend, attempt)
    }

    /// Why a pin is not in the read model, told by its stream's last event.
    private func whyAbsent(_ objectId: ObjectID, on map: String?) async throws -> ModerationError {
        guard let last = try await log.stream(objectId).last, map == nil || last.map == map else { return .noSuchPin(objectId) }
        return switch last.type {
        case .hidden: ModerationError.alreadyHidden(objectId)
        case .deleted: ModerationError.deleted(objectId)
        case .posted, .updated, .unhidden: ModerationError.noSuchPin(objectId)
        }
    }
}

extension LocationChange {
    /// The pin, for a change that carries its whole state.
    var location: StudentLocation? {
        if case .upserted(let location) = self { location } else { nil }
    }
}

/// Runs `attempt` (which reads a stream's state, then appends at its version) again when another append
/// took the stream's next version first, up to five times; `didAppend` once it appended.
func appendingAgainOnConflict<T>(didAppend: () -> Void, _ attempt: () async throws -> T) async throws -> T {
    for _ in 0..<5 {
        do {
            let done = try await attempt()
            didAppend()
            return done
        } catch EventStore.AppendError.versionConflict {
            continue
        }
    }
    throw LocationError.busy
}
