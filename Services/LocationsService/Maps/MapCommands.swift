import Foundation
import OnTheMapShared
import ServiceKit

/// A map's life: who may do what on it, decided from its read models, and each change one event of its
/// stream. Anything on a map the caller may not read answers as a map that does not exist (404), so a
/// members-only map's existence is never revealed.
struct MapCommands: Sendable {
    let store: MapStore
    /// Tells every cache and follower that the log moved (as a pin's append does).
    let didAppend: @Sendable () -> Void
    var clock: any WallClock = SystemClock()
    /// The deployment's cap on one student's pins, for maps that set none.
    var defaultPinsPerStudent = PinCap.defaultPinsPerStudent
    /// Who may do what, kept for the reads of every request to a map; a change always reads the store.
    var accessCache: MapAccessCache?

    static let maximumNameLength = 100
    static let maximumPinsPerStudent = 100
    static let invitesExpireIn = 60...31_536_000
    static let inviteUses = 1...10_000
    static let maximumLiveInvites = 100

    static let notFound = LocationError.absent("No such map.")
    static let noInvite = LocationError.absent("No such invite.")

    /// The settings a creation or a change gives; every field optional in the body, checked here.
    struct Settings: Sendable, Hashable, Decodable {
        var slug: String?
        var name: String?
        var read: String?
        var post: String?
        var pinsPerStudent: Int?
        var approval: Bool?
    }

    struct InviteRequest: Sendable, Hashable, Decodable {
        var expiresIn: Int?
        var uses: Int?
    }

    // MARK: Reading

    /// The map as `actor` may see it: nil (404) unless they may read it. `cached`: from memory when it can
    /// be trusted (a read); a change reads the store, whose version it appends at.
    func access(_ slug: MapSlug, actor: Actor?, cached: Bool = false) async throws -> MapAccess {
        let found =
            if cached, let accessCache {
                try await accessCache.current(MapStore.cacheKey(slug, actorKey: actor?.key)).access
            } else {
                try await store.access(slug, actorKey: actor?.key)
            }
        guard let access = found, access.canRead || access.role == .pending else { throw Self.notFound }
        return access
    }

    /// A map for one who may read its pins: a pending member is still a non-member here.
    func readable(_ slug: MapSlug, actor: Actor?, cached: Bool = false) async throws -> MapAccess {
        let access = try await access(slug, actor: actor, cached: cached)
        guard access.canRead else { throw Self.notFound }
        return access
    }

    func moderated(_ slug: MapSlug, actor: Actor) async throws -> MapAccess {
        let access = try await readable(slug, actor: actor)
        guard access.canModerate else { throw LocationError.forbidden("Only the map's moderators may do this.") }
        return access
    }

    func owned(_ slug: MapSlug, actor: Actor) async throws -> MapAccess {
        let access = try await readable(slug, actor: actor)
        guard access.isOwner else { throw LocationError.forbidden("Only the map's owner may do this.") }
        return access
    }

    // MARK: The map

    func create(_ settings: Settings, actor: Actor, metadata: EventMetadata) async throws -> MapRecord {
        guard let text = settings.slug else { throw LocationError.invalid("slug is required.") }
        guard let slug = MapSlug(text) else { throw LocationError.invalid(MapSlug.rule) }
        guard !slug.isReserved else { throw LocationError.invalid("\(slug) is a reserved word; choose another slug.") }
        guard let name = settings.name else { throw LocationError.invalid("name is required.") }
        let read = try Self.readers(settings.read ?? MapReaders.members.rawValue)
        let post = try Self.posters(settings.post ?? MapPosters.members.rawValue)
        let pinsPerStudent = try settings.pinsPerStudent.map(Self.pinsPerStudent)
        var data = JSONWriter()
        data.beginObject()
        data.field("slug", slug.rawValue)
        data.field("name", try Self.name(name))
        data.field("read", read.rawValue)
        data.field("post", post.rawValue)
        if let pinsPerStudent { data.field("pinsPerStudent", pinsPerStudent) }
        data.key("approval")
        data.bool(settings.approval ?? false)
        data.key("owner")
        data.beginObject()
        data.field("key", actor.key)
        data.field("firstName", actor.firstName)
        data.field("lastName", actor.lastName)
        data.endObject()
        data.field("at", clock.now.iso8601)
        data.endObject()
        do {
            try await store.append(.created, data: data.string, to: slug, expectedVersion: 0, metadata: mapped(metadata, slug))
        } catch MapStoreError.slugTaken, EventStore.AppendError.versionConflict {
            throw LocationError.taken("A map called \(slug) exists already.")
        }
        didAppend()
        guard let created = try await store.access(slug, actorKey: actor.key) else { throw Self.notFound }
        return created.map
    }

    func change(_ slug: MapSlug, _ settings: Settings, actor: Actor, metadata: EventMetadata) async throws -> MapAccess {
        try await againOnConflict {
            let access = try await owned(slug, actor: actor)
            guard settings.slug == nil || settings.slug == slug.rawValue else {
                throw LocationError.invalid("A map's slug cannot change: its members' apps and links use it.")
            }
            var data = JSONWriter()
            data.beginObject()
            if let name = settings.name { data.field("name", try Self.name(name)) }
            if let read = settings.read { data.field("read", try Self.readers(read).rawValue) }
            if let post = settings.post { data.field("post", try Self.posters(post).rawValue) }
            if let pins = settings.pinsPerStudent { data.field("pinsPerStudent", try Self.pinsPerStudent(pins)) }
            if let approval = settings.approval {
                data.key("approval")
                data.bool(approval)
            }
            data.field("at", clock.now.iso8601)
            data.endObject()
            try await store.append(
                .settingsChanged, data: data.string, to: slug, expectedVersion: access.map.version, metadata: mapped(metadata, slug))
            return try await readable(slug, actor: actor)
        }
    }

    func delete(_ slug: MapSlug, actor: Actor, metadata: EventMetadata) async throws -> Int {
        _ = try await owned(slug, actor: actor)
        guard let pins = try await store.delete(slug, at: clock.now, metadata: mapped(metadata, slug)) else { throw Self.notFound }
        didAppend()
        return pins
    }

    // MARK: Members

    /// Joins `actor` with an invite's code: a member, or pending where the map approves its members. A
    /// wrong, revoked, expired or used-up code, or one made before the caller was removed, answers as no
    /// invite at all, as does a map the caller cannot know of.
    func join(_ slug: MapSlug, code: String, actor: Actor, metadata: EventMetadata) async throws -> (MapMember, created: Bool) {
        guard Self.isWellFormedCode(code) else { throw Self.noInvite }
        return try await againOnConflict {
            guard let access = try await store.access(slug, actorKey: actor.key), !access.map.deleted else { throw Self.noInvite }
            if access.role != nil, let member = try await store.member(actor.key, of: slug) { return (member, false) }
            let now = clock.now
            guard let invite = try await store.invites(of: slug, code: code).first, invite.admits(at: now) else { throw Self.noInvite }
            if let removed = try await store.removal(of: actor.key, from: slug), invite.createdAt <= removed { throw Self.noInvite }
            let role: MapRole = access.map.approval ? .pending : .member
            var data = JSONWriter()
            data.beginObject()
            data.field("key", actor.key)
            data.field("firstName", actor.firstName)
            data.field("lastName", actor.lastName)
            data.field("role", role.rawValue)
            data.field("invite", code)
            data.field("at", now.iso8601)
            data.endObject()
            try await store.append(.memberJoined, data: data.string, to: slug, expectedVersion: access.map.version, metadata: mapped(metadata, slug))
            return (MapMember(key: actor.key, firstName: actor.firstName, lastName: actor.lastName, role: role, joinedAt: now), true)
        }
    }

    /// `actor` leaves the map; their pins on it leave with them. The owner hands the map on first.
    func leave(_ slug: MapSlug, actor: Actor, metadata: EventMetadata) async throws {
        try await againOnConflict {
            let access = try await access(slug, actor: actor)
            guard let role = access.role else { throw LocationError.absent("You are not a member of this map.") }
            guard role != .owner else {
                throw LocationError.forbidden("The owner cannot leave; hand the map to another member first, or delete it.")
            }
            _ = try await store.depart(
                .memberLeft, data: Self.memberData(actor.key, at: clock.now), member: actor.key, from: slug,
                expectedVersion: access.map.version, at: clock.now, metadata: mapped(metadata, slug))
        }
    }

    /// A moderator removes `key` (a pending member: turned away); their pins leave the map with them, and
    /// no invite made before lets them back. A moderator may remove members only; the owner anyone but themself.
    func remove(_ key: String, from slug: MapSlug, actor: Actor, metadata: EventMetadata) async throws -> Int {
        try await againOnConflict {
            let access = try await moderated(slug, actor: actor)
            guard let member = try await store.member(key, of: slug) else { throw LocationError.absent("No such member.") }
            guard member.role != .owner else { throw LocationError.forbidden("The owner cannot be removed from their map.") }
            guard member.role < .moderator || access.role == .owner else {
                throw LocationError.forbidden("Only the map's owner may remove a moderator.")
            }
            let now = clock.now
            return try await store.depart(
                .memberRemoved, data: Self.memberData(key, at: now), member: key, from: slug, expectedVersion: access.map.version,
                at: now, metadata: mapped(metadata, slug))
        }
    }

    /// Sets a member's role: the owner grants and revokes moderator, and hands ownership on (becoming a
    /// moderator); a moderator may only approve a pending member (`member`).
    func setRole(_ key: String, to text: String, on slug: MapSlug, actor: Actor, metadata: EventMetadata) async throws -> MapMember {
        guard let role = MapRole(rawValue: text), role != .pending else {
            throw LocationError.invalid("role must be member, moderator or owner.")
        }
        return try await againOnConflict {
            let access = try await moderated(slug, actor: actor)
            guard let member = try await store.member(key, of: slug) else { throw LocationError.absent("No such member.") }
            if member.role == role { return member }
            let approving = member.role == .pending && role == .member
            guard access.role == .owner || approving else { throw LocationError.forbidden("Only the map's owner may change roles.") }
            guard member.role != .owner else {
                throw LocationError.forbidden("The owner keeps their role until they hand the map to another member.")
            }
            let (type, named): (MapEventType, MapRole) =
                role < member.role && member.role == .moderator ? (.roleRevoked, .moderator) : (.roleGranted, role)
            var data = JSONWriter()
            data.beginObject()
            data.field("key", key)
            data.field("role", named.rawValue)
            data.field("at", clock.now.iso8601)
            data.endObject()
            try await store.append(type, data: data.string, to: slug, expectedVersion: access.map.version, metadata: mapped(metadata, slug))
            guard let changed = try await store.member(key, of: slug) else { throw LocationError.absent("No such member.") }
            return changed
        }
    }

    // MARK: Invites

    func invite(_ slug: MapSlug, _ request: InviteRequest, actor: Actor, metadata: EventMetadata) async throws -> MapInvite {
        if let seconds = request.expiresIn, !Self.invitesExpireIn.contains(seconds) {
            throw LocationError.invalid("expiresIn must be \(Self.invitesExpireIn.lowerBound) to \(Self.invitesExpireIn.upperBound) seconds.")
        }
        if let uses = request.uses, !Self.inviteUses.contains(uses) {
            throw LocationError.invalid("uses must be \(Self.inviteUses.lowerBound) to \(Self.inviteUses.upperBound).")
        }
        return try await againOnConflict {
            let access = try await moderated(slug, actor: actor)
            let now = clock.now
            guard try await store.invites(of: slug).filter({ $0.admits(at: now) }).count < Self.maximumLiveInvites else {
                throw LocationError.forbidden("This map has \(Self.maximumLiveInvites) live invites; revoke one first.")
            }
            let invite = MapInvite(
                code: Self.newCode(), createdAt: now, expiresAt: request.expiresIn.map { now.adding(.seconds($0)) }, uses: request.uses,
                used: 0, revoked: false)
            var data = JSONWriter()
            data.beginObject()
            data.field("code", invite.code)
            if let expiresAt = invite.expiresAt { data.field("expiresAt", expiresAt.iso8601) }
            if let uses = invite.uses { data.field("uses", uses) }
            data.field("at", now.iso8601)
            data.endObject()
            try await store.append(.inviteCreated, data: data.string, to: slug, expectedVersion: access.map.version, metadata: mapped(metadata, slug))
            return invite
        }
    }

    /// The invites that still let someone in.
    func liveInvites(_ slug: MapSlug, actor: Actor) async throws -> [MapInvite] {
        _ = try await moderated(slug, actor: actor)
        let now = clock.now
        return try await store.invites(of: slug).filter { $0.admits(at: now) }
    }

    func revoke(_ code: String, on slug: MapSlug, actor: Actor, metadata: EventMetadata) async throws {
        try await againOnConflict {
            let access = try await moderated(slug, actor: actor)
            guard Self.isWellFormedCode(code), let invite = try await store.invites(of: slug, code: code).first, !invite.revoked else {
                throw Self.noInvite
            }
            var data = JSONWriter()
            data.beginObject()
            data.field("code", code)
            data.field("at", clock.now.iso8601)
            data.endObject()
            try await store.append(.inviteRevoked, data: data.string, to: slug, expectedVersion: access.map.version, metadata: mapped(metadata, slug))
        }
    }

    // MARK: Rules

    static func name(_ text: String) throws(LocationError) -> String {
        let name = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !name.isEmpty else { throw .invalid("name must not be empty.") }
        guard name.count <= maximumNameLength else { throw .invalid("name must be at most \(maximumNameLength) characters.") }
        try Validation.printable(name, field: "name")
        return name
    }

    static func readers(_ text: String) throws(LocationError) -> MapReaders {
        guard let readers = MapReaders(rawValue: text) else { throw .invalid("read must be public or members.") }
        return readers
    }

    static func posters(_ text: String) throws(LocationError) -> MapPosters {
        guard let posters = MapPosters(rawValue: text) else { throw .invalid("post must be members or signedIn.") }
        return posters
    }

    static func pinsPerStudent(_ count: Int) throws(LocationError) -> Int {
        guard (1...maximumPinsPerStudent).contains(count) else { throw .invalid("pinsPerStudent must be 1 to \(maximumPinsPerStudent).") }
        return count
    }

    /// 128 random bits, base64url without padding: 22 characters no one guesses.
    static func newCode() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<16).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        return Base64URL.encode(bytes)
    }

    static func isWellFormedCode(_ code: String) -> Bool {
        code.utf8.count == 22
            && code.utf8.allSatisfy { byte in
                (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
            }
    }

    private static func memberData(_ key: String, at moment: Timestamp) -> String {
        var data = JSONWriter()
        data.beginObject()
        data.field("key", key)
        data.field("at", moment.iso8601)
        data.endObject()
        return data.string
    }

    private func mapped(_ metadata: EventMetadata, _ slug: MapSlug) -> EventMetadata {
        var metadata = metadata
        metadata.map = slug.rawValue
        return metadata
    }

    private func againOnConflict<T>(_ attempt: () async throws -> T) async throws -> T {
        try await appendingAgainOnConflict(didAppend: didAppend, attempt)
    }
}
