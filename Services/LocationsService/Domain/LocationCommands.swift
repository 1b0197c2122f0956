import Foundation
import Logging
import OnTheMapShared
import ServiceKit

/// The write side: turns a request to post, change or delete a pin into one event, after checking the
/// rules (validation, ownership, version) against the read model.
struct LocationCommands: Sendable {
    let log: any LocationLog
    /// Called after every append that committed, so cached reads move on at once.
    let didAppend: @Sendable () -> Void
    /// When each event happens (its pin's `createdAt`, `updatedAt` or `deletedAt`).
    var clock: any WallClock = SystemClock()

    /// What the caller tells us about the request, kept in each event's metadata.
    struct Context: Sendable {
        var actor: Actor
        var requestId: String?
        var userAgent: String?
        var idempotencyKey: String?
        var requestHash: String?
        /// The map the request is on (`''`: the default map): a pin of another is not there for it. Nil: any
        /// map (an operator's moderation).
        var map: String? = ""

        var metadata: EventMetadata {
            EventMetadata(
                actor: actor, requestId: requestId, idempotencyKey: idempotencyKey, userAgent: userAgent,
                requestHash: requestHash, map: map ?? "")
        }

        /// The metadata of an event of `pin`, on its map.
        func metadata(for pin: ReadModel.Pin) -> EventMetadata {
            var metadata = self.metadata
            metadata.map = pin.map
            return metadata
        }
    }

    func post(_ input: LocationInput, context: Context) async throws -> PostLocationAnswer {
        try await post(input, context: context, replayOnly: false).answer
    }

    /// A new pin, or the answer to the earlier post with the same idempotency key (`replayed`); with
    /// `replayOnly`, only that earlier answer: without one, nothing is appended (`noEarlierPost`).
    func post(_ input: LocationInput, context: Context, replayOnly: Bool) async throws -> (answer: PostLocationAnswer, replayed: Bool) {
        if let key = context.idempotencyKey, let earlier = try await earlierAnswer(to: key, context: context) {
            return (earlier, true)
        }
        guard !replayOnly else { throw LocationError.noEarlierPost }
        guard let mapString = input.mapString else { throw LocationError.invalid("mapString is required.") }
        guard let mediaURL = input.mediaURL else { throw LocationError.invalid("mediaURL is required.") }
        guard let latitude = input.latitude else { throw LocationError.invalid("latitude is required.") }
        guard let longitude = input.longitude else { throw LocationError.invalid("longitude is required.") }
        let now = clock.now
        let location = StudentLocation(
            objectId: .random(),
            uniqueKey: context.actor.key,
            firstName: try Validation.name(context.actor.firstName, field: "firstName"),
            lastName: try Validation.name(context.actor.lastName, field: "lastName"),
            mapString: try Validation.mapString(mapString),
            mediaURL: try Validation.mediaURL(mediaURL),
            latitude: try Validation.latitude(latitude),
            longitude: try Validation.longitude(longitude),
            createdAt: now, updatedAt: now)

        do {
            _ = try await log.appendPosted(location, metadata: context.metadata)
        } catch EventStore.AppendError.duplicateIdempotencyKey {
            // A retry raced the first attempt; the first one won and its answer is the answer.
            if let key = context.idempotencyKey, let earlier = try await earlierAnswer(to: key, context: context) {
                return (earlier, true)
            }
            throw LocationError.busy
        }
        didAppend()
        return (PostLocationAnswer(createdAt: location.createdAt, objectId: location.objectId), false)
    }

    private func earlierAnswer(to key: String, context: Context) async throws -> PostLocationAnswer? {
        guard let (location, hash) = try await log.postedEvent(actorKey: context.actor.key, idempotencyKey: key) else {
            return nil
        }
        guard hash == context.requestHash else { throw LocationError.idempotencyKeyReused }
        return PostLocationAnswer(createdAt: location.createdAt, objectId: location.objectId)
    }

    /// Changes the given fields; the owner's names always come from the acting account.
    func update(_ objectId: ObjectID, with input: LocationInput, ifMatch: ETagCondition?, context: Context) async throws -> PutLocationAnswer {
        // Without If-Match the last writer wins: a lost race re-reads and tries again.
        for _ in 0..<5 {
            let pin = try await ownedPin(objectId, context: context, ifMatch: ifMatch)
            var location = pin.location
            location.firstName = try Validation.name(context.actor.firstName, field: "firstName")
            location.lastName = try Validation.name(context.actor.lastName, field: "lastName")
            if let mapString = input.mapString { location.mapString = try Validation.mapString(mapString) }
            if let mediaURL = input.mediaURL { location.mediaURL = try Validation.mediaURL(mediaURL) }
            if let latitude = input.latitude { location.latitude = try Validation.latitude(latitude) }
            if let longitude = input.longitude { location.longitude = try Validation.longitude(longitude) }
            location.updatedAt = max(clock.now, location.updatedAt)
            do {
                try await log.appendUpdated(location, expectedVersion: pin.version, metadata: context.metadata(for: pin))
            } catch EventStore.AppendError.versionConflict {
                if let ifMatch { throw LocationError.versionMismatch(expected: ifMatch.description, current: pin.version + 1) }
                continue
            }
            didAppend()
            return PutLocationAnswer(updatedAt: location.updatedAt, objectId: objectId, createAt: location.createdAt)
        }
        throw LocationError.busy
    }

    func delete(_ objectId: ObjectID, ifMatch: ETagCondition?, context: Context) async throws {
        for _ in 0..<5 {
            let pin = try await ownedPin(objectId, context: context, ifMatch: ifMatch)
            let deletion = LocationDeleted(
                objectId: objectId, uniqueKey: pin.location.uniqueKey,
                deletedAt: max(clock.now, pin.location.updatedAt))
            do {
                try await log.appendDeleted(deletion, expectedVersion: pin.version, metadata: context.metadata(for: pin))
            } catch EventStore.AppendError.versionConflict {
                if let ifMatch { throw LocationError.versionMismatch(expected: ifMatch.description, current: pin.version + 1) }
                continue
            }
            didAppend()
            return
        }
        throw LocationError.busy
    }

    /// The acting student erased: every pin they posted, with its whole history (`LocationLog.erase`).
    func erase(context: Context) async throws -> Int {
        let pins = try await log.erase(student: context.actor.key, at: clock.now)
        didAppend()
        return pins
    }

    private func ownedPin(_ objectId: ObjectID, context: Context, ifMatch: ETagCondition?) async throws -> ReadModel.Pin {
        guard let pin = try await pin(objectId, on: context.map) else { throw LocationError.notFound }
        guard pin.location.uniqueKey == context.actor.key else { throw LocationError.notOwner }
        if let ifMatch, !ifMatch.matches(version: pin.version) {
            throw LocationError.versionMismatch(expected: ifMatch.description, current: pin.version)
        }
        return pin
    }
}

extension LocationCommands {
    /// The pin in the read model, if it is on `map` (nil: any map).
    func pin(_ objectId: ObjectID, on map: String?) async throws -> ReadModel.Pin? {
        guard objectId.isWellFormed, let pin = try await log.pin(objectId), map == nil || pin.map == map else { return nil }
        return pin
    }
}

/// An `If-Match` header: `*`, or one or more entity tags of the form `"<version>"` (weak or strong).
struct ETagCondition: Sendable, Hashable, CustomStringConvertible {
    let raw: String

    init?(_ header: String?) {
        guard let header, !header.trimmingCharacters(in: .whitespaces).isEmpty else { return nil }
        raw = header.trimmingCharacters(in: .whitespaces)
    }

    static func tag(for version: Int) -> String { "\"\(version)\"" }

    func matches(version: Int) -> Bool {
        if raw == "*" { return true }
        return raw.split(separator: ",").contains { candidate in
            var tag = candidate.trimmingCharacters(in: .whitespaces)
            if tag.hasPrefix("W/") { tag.removeFirst(2) }
            return tag == Self.tag(for: version)
        }
    }

    var description: String { raw }
}
