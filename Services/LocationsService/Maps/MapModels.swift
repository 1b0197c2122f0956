import Foundation
import NIOCore
import OnTheMapShared

/// Who may read a map's pins: anyone (`public`, as the default map), or its members alone (`members`).
enum MapReaders: String, Sendable, CaseIterable {
    case `public`, members
}

/// Who may post on a map: its members, or any signed-in account (`signedIn`).
enum MapPosters: String, Sendable, CaseIterable {
    case members, signedIn
}

/// A member's place on a map, from least to most.
enum MapRole: String, Sendable, Comparable, CaseIterable {
    /// Joined a map that approves its members, and not approved yet: reads as a non-member.
    case pending, member, moderator, owner

    static func < (lhs: MapRole, rhs: MapRole) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }
}

/// The events of a map's own life, in its stream `map-{slug}` (`locations.apply_map_event` folds them).
enum MapEventType: String, Sendable, CaseIterable {
    case created = "MapCreated"
    case settingsChanged = "MapSettingsChanged"
    case memberJoined = "MemberJoined"
    case memberLeft = "MemberLeft"
    case memberRemoved = "MemberRemoved"
    case roleGranted = "RoleGranted"
    case roleRevoked = "RoleRevoked"
    case inviteCreated = "InviteCreated"
    case inviteRevoked = "InviteRevoked"
    case deleted = "MapDeleted"
}

/// A map as `locations.maps` holds it.
struct MapRecord: Sendable, Hashable {
    var slug: MapSlug
    var name: String
    var read: MapReaders
    var post: MapPosters
    /// Nil: the deployment's cap.
    var pinsPerStudent: Int?
    var approval: Bool
    var createdAt: Timestamp
    var deleted: Bool
    /// Its stream's last version: the next event's expected version.
    var version: Int
}

/// What one caller may do on one map, from its settings and the caller's role there.
struct MapAccess: Sendable, Hashable {
    var map: MapRecord
    /// The caller's role; nil for a non-member or an anonymous caller.
    var role: MapRole?
    /// Whether there is a signed-in caller at all.
    var signedIn: Bool

    var isMember: Bool { (role ?? .pending) >= .member }
    var canRead: Bool { !map.deleted && (map.read == .public || isMember) }
    var canPost: Bool { canRead && (isMember || (map.post == .signedIn && signedIn)) }
    var canModerate: Bool { canRead && (role ?? .pending) >= .moderator }
    var isOwner: Bool { canRead && role == .owner }
}

struct MapMember: Sendable, Hashable {
    var key: String
    var firstName: String
    var lastName: String
    var role: MapRole
    var joinedAt: Timestamp
}

struct MapInvite: Sendable, Hashable {
    var code: String
    var createdAt: Timestamp
    var expiresAt: Timestamp?
    /// How many joins it allows; nil: any number.
    var uses: Int?
    var used: Int
    var revoked: Bool

    /// Whether it still lets someone in at `now`.
    func admits(at now: Timestamp) -> Bool {
        !revoked && (expiresAt.map { now < $0 } ?? true) && (uses.map { used < $0 } ?? true)
    }
}

/// A pin a moderator took off a map, and why.
struct HiddenPin: Sendable, Hashable {
    var pin: StudentLocation
    var reason: String
    var hiddenAt: Timestamp
    var hiddenBy: String
}

/// The map API's answers, written as the rest of the API writes JSON.
enum MapWire {
    static func map(_ map: MapRecord, role: MapRole?, defaultPinsPerStudent: Int) -> ByteBuffer {
        var json = JSONWriter()
        write(map, role: role, defaultPinsPerStudent: defaultPinsPerStudent, into: &json)
        return json.buffer
    }

    static func maps(_ maps: [(MapRecord, MapRole?)], defaultPinsPerStudent: Int) -> ByteBuffer {
        results(maps) { json, entry in write(entry.0, role: entry.1, defaultPinsPerStudent: defaultPinsPerStudent, into: &json) }
    }

    static func member(_ member: MapMember) -> ByteBuffer {
        var json = JSONWriter()
        write(member, into: &json)
        return json.buffer
    }

    static func members(_ members: [MapMember]) -> ByteBuffer {
        results(members) { json, member in write(member, into: &json) }
    }

    static func invite(_ invite: MapInvite, slug: MapSlug) -> ByteBuffer {
        var json = JSONWriter()
        write(invite, slug: slug, into: &json)
        return json.buffer
    }

    static func invites(_ invites: [MapInvite], slug: MapSlug) -> ByteBuffer {
        results(invites) { json, invite in write(invite, slug: slug, into: &json) }
    }

    static func hidden(_ hidden: HiddenPin) -> ByteBuffer {
        var json = JSONWriter()
        write(hidden, into: &json)
        return json.buffer
    }

    static func hiddenPins(_ pins: [HiddenPin]) -> ByteBuffer {
        results(pins) { json, hidden in write(hidden, into: &json) }
    }

    /// Where an invite takes its guest: a path, which the gateway makes a whole address with its own origin.
    static func joinPath(_ slug: MapSlug, code: String) -> String { "\(slug.path)join/\(code)" }

    private static func results<T>(_ items: [T], _ write: (inout JSONWriter, T) -> Void) -> ByteBuffer {
        var json = JSONWriter()
        json.beginObject()
        json.key("results")
        json.beginArray()
        for item in items { write(&json, item) }
        json.endArray()
        json.endObject()
        return json.buffer
    }

    private static func write(_ map: MapRecord, role: MapRole?, defaultPinsPerStudent: Int, into json: inout JSONWriter) {
        json.beginObject()
        json.field("slug", map.slug.rawValue)
        json.field("name", map.name)
        json.field("read", map.read.rawValue)
        json.field("post", map.post.rawValue)
        json.field("pinsPerStudent", map.pinsPerStudent ?? defaultPinsPerStudent)
        json.key("approval")
        json.bool(map.approval)
        json.field("createdAt", map.createdAt.iso8601)
        json.key("role")
        if let role { json.string(role.rawValue) } else { json.null() }
        json.field("url", map.slug.path)
        json.endObject()
    }

    private static func write(_ member: MapMember, into json: inout JSONWriter) {
        json.beginObject()
        json.field("key", member.key)
        json.field("firstName", member.firstName)
        json.field("lastName", member.lastName)
        json.field("role", member.role.rawValue)
        json.field("joinedAt", member.joinedAt.iso8601)
        json.endObject()
    }

    private static func write(_ invite: MapInvite, slug: MapSlug, into json: inout JSONWriter) {
        json.beginObject()
        json.field("code", invite.code)
        json.field("url", joinPath(slug, code: invite.code))
        json.field("createdAt", invite.createdAt.iso8601)
        json.key("expiresAt")
        if let expiresAt = invite.expiresAt { json.string(expiresAt.iso8601) } else { json.null() }
        json.key("uses")
        if let uses = invite.uses { json.number(uses) } else { json.null() }
        json.field("used", invite.used)
        json.endObject()
    }

    private static func write(_ hidden: HiddenPin, into json: inout JSONWriter) {
        json.beginObject()
        json.key("pin")
        json.raw(hidden.pin.json)
        json.field("reason", hidden.reason)
        json.field("hiddenAt", hidden.hiddenAt.iso8601)
        json.field("hiddenBy", hidden.hiddenBy)
        json.endObject()
    }
}
