import Foundation
import OnTheMapShared

/// One class map as the gateway describes it: its settings, and the caller's role on it.
public struct ClassMap: Hashable, Sendable, Codable {
    /// Who sees the map's pins.
    public enum ReadAccess: String, Hashable, Sendable, Codable, CaseIterable {
        case `public`
        case members
    }

    /// Who may post on the map.
    public enum PostAccess: String, Hashable, Sendable, Codable, CaseIterable {
        case members
        case signedIn
    }

    /// `ios-2027`: the map's name in its URLs.
    public var slug: String
    public var name: String
    public var read: ReadAccess
    public var post: PostAccess
    public var pinsPerStudent: Int
    /// Whether a student who joins waits, `pending`, until a moderator approves them.
    public var approval: Bool
    public var createdAt: Timestamp
    /// The caller's role; nil for someone who is not on the map.
    public var role: MapRole?
    /// The map's web page, a path on the gateway: `/maps/ios-2027/`.
    public var url: String

    public init(
        slug: String, name: String, read: ReadAccess, post: PostAccess, pinsPerStudent: Int, approval: Bool,
        createdAt: Timestamp, role: MapRole?, url: String
    ) {
        self.slug = slug
        self.name = name
        self.read = read
        self.post = post
        self.pinsPerStudent = pinsPerStudent
        self.approval = approval
        self.createdAt = createdAt
        self.role = role
        self.url = url
    }
}

/// A person's place on a map. Each role may do what the ones after it may, and more.
public enum MapRole: String, Hashable, Sendable, Codable, CaseIterable {
    /// Made the map; changes its settings, deletes it, hands it on.
    case owner
    /// Hides and brings back pins, removes members, manages invites, approves those who wait.
    case moderator
    /// Posts, changes and deletes their own pins.
    case member
    /// Joined a map that wants approval and waits for it; reads the map as an outsider does.
    case pending
}

/// A person on a map, as its moderators see them.
public struct MapMember: Hashable, Sendable, Codable {
    public var key: String
    public var firstName: String
    public var lastName: String
    public var role: MapRole
    public var joinedAt: Timestamp

    public init(key: String, firstName: String, lastName: String, role: MapRole, joinedAt: Timestamp) {
        self.key = key
        self.firstName = firstName
        self.lastName = lastName
        self.role = role
        self.joinedAt = joinedAt
    }

    public var fullName: String { [firstName, lastName].filter { !$0.isEmpty }.joined(separator: " ") }
}

/// An invite to a map: whoever opens `url` signed in, or joins with `code`, becomes a member.
public struct MapInvite: Hashable, Sendable, Codable {
    public var code: String
    /// `https://host/maps/ios-2027/join/<code>`.
    public var url: String
    public var createdAt: Timestamp
    /// Nil for an invite that does not expire.
    public var expiresAt: Timestamp?
    /// How many may join with it; nil for no limit.
    public var uses: Int?
    /// How many have joined with it.
    public var used: Int

    public init(code: String, url: String, createdAt: Timestamp, expiresAt: Timestamp?, uses: Int?, used: Int) {
        self.code = code
        self.url = url
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.uses = uses
        self.used = used
    }

    enum CodingKeys: String, CodingKey {
        case code, url, createdAt, expiresAt, uses, used
    }

    /// `expiresAt` and `uses` are written as `null` when there is no limit, so a program reading the JSON
    /// sees every key.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(code, forKey: .code)
        try container.encode(url, forKey: .url)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encode(expiresAt, forKey: .expiresAt)
        try container.encode(uses, forKey: .uses)
        try container.encode(used, forKey: .used)
    }
}

/// A pin a moderator took off a map, why, and by whom; only moderators see it.
public struct HiddenPin: Hashable, Sendable, Codable {
    public var pin: StudentLocation
    public var reason: String
    public var hiddenAt: Timestamp
    /// The account key of the moderator who hid it.
    public var hiddenBy: String

    public init(pin: StudentLocation, reason: String, hiddenAt: Timestamp, hiddenBy: String) {
        self.pin = pin
        self.reason = reason
        self.hiddenAt = hiddenAt
        self.hiddenBy = hiddenBy
    }
}

/// Settings to give a map: for a new one, what is not given takes the gateway's default; for a change, what
/// is not given stays as it is.
public struct MapSettings: Hashable, Sendable {
    /// 1 to 100 characters, shown to people; no control characters.
    public var name: String?
    public var read: ClassMap.ReadAccess?
    public var post: ClassMap.PostAccess?
    /// 1 to 100 (3 on a new map).
    public var pinsPerStudent: Int?
    public var approval: Bool?

    public init(
        name: String? = nil, read: ClassMap.ReadAccess? = nil, post: ClassMap.PostAccess? = nil, pinsPerStudent: Int? = nil,
        approval: Bool? = nil
    ) {
        self.name = name
        self.read = read
        self.post = post
        self.pinsPerStudent = pinsPerStudent
        self.approval = approval
    }

    public var isEmpty: Bool { self == MapSettings() }

    /// The body of `POST /v1/maps` (with `slug`) or `PATCH /v1/maps/{slug}`: the settings given, no others.
    func json(slug: String? = nil) -> [UInt8] {
        var writer = JSONWriter()
        writer.beginObject()
        if let slug { writer.field("slug", slug) }
        if let name { writer.field("name", name) }
        if let read { writer.field("read", read.rawValue) }
        if let post { writer.field("post", post.rawValue) }
        if let pinsPerStudent { writer.field("pinsPerStudent", pinsPerStudent) }
        if let approval {
            writer.key("approval")
            writer.bool(approval)
        }
        writer.endObject()
        return Array(writer.buffer.readableBytesView)
    }
}

/// What joining a map needs: the map and the invite's code. People pass invites on as links
/// (`https://host/maps/ios-2027/join/<code>`), which carry both, or as the bare code, for a map named apart.
public struct InviteCode: Hashable, Sendable {
    public var map: String
    public var code: String

    public init(map: String, code: String) {
        self.map = map
        self.code = code
    }

    /// An invite link's map and code, or a bare code for `map`; nil for anything else, and for a bare code
    /// without a map. A link's own map wins over `map`.
    public init?(_ text: String, map: String? = nil) {
        let text = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !text.isEmpty else { return nil }
        guard text.contains("/") else {
            guard let map, !text.contains(where: { $0.isWhitespace || $0 == "?" || $0 == "#" }) else { return nil }
            self.init(map: map, code: text)
            return
        }
        // A full URL, or the path alone (`/maps/ios-2027/join/<code>`, as a page may show it).
        let path: String
        if let components = URLComponents(string: text), components.scheme != nil {
            path = components.path
        } else {
            path = String(text.prefix { $0 != "?" && $0 != "#" })
        }
        let segments = path.split(separator: "/").map(String.init)
        guard segments.count >= 4 else { return nil }
        let tail = segments.suffix(4).map { $0 }
        guard tail[0] == "maps", tail[2] == "join", !tail[1].isEmpty, !tail[3].isEmpty else { return nil }
        self.init(map: tail[1], code: tail[3])
    }
}
