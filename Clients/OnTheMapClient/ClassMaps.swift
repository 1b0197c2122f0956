import Foundation
import NIOHTTP1
import OnTheMapShared

/// The map API (`/v1/maps…`): class maps, their members, invites and hidden pins. Each call names its map;
/// the client's own `map` does not change where they go. All of them need a session, but reading a public map.
extension OnTheMapClient {
    // MARK: Maps

    /// `POST /v1/maps`: a new class map, with the session's account as its owner.
    public func createMap(slug: String, settings: MapSettings) async throws(OnTheMapError) -> ClassMap {
        let answer = try await send(.POST, "/v1/maps", body: settings.json(slug: slug), authorized: true)
        guard answer.status == 201 || answer.status == 200 else { throw Self.mapRouteError(answer, slug: slug) }
        return try Self.decode(ClassMap.self, answer.body[...], answer)
    }

    /// `GET /v1/maps`: the maps the session's account is on, in any role (waiting for approval included),
    /// newest first.
    public func myMaps() async throws(OnTheMapError) -> [ClassMap] {
        let answer = try await send(.GET, "/v1/maps", authorized: true)
        guard answer.status == 200 else { throw Self.mapRouteError(answer, slug: nil) }
        return try Self.decode(Results<ClassMap>.self, answer.body[...], answer).results
    }

    /// `GET /v1/maps/{slug}`: a map's settings and the caller's role; anyone may read a public map's.
    public func classMap(_ slug: String) async throws(OnTheMapError) -> ClassMap {
        let answer = try await send(.GET, Self.mapPath(slug), authorized: session != nil)
        guard answer.status == 200 else { throw Self.mapRouteError(answer, slug: slug) }
        return try Self.decode(ClassMap.self, answer.body[...], answer)
    }

    /// `PATCH /v1/maps/{slug}`: changes the settings given (the owner's alone), and answers the map as it is now.
    public func updateMap(_ slug: String, _ settings: MapSettings) async throws(OnTheMapError) -> ClassMap {
        let answer = try await send(.PATCH, Self.mapPath(slug), body: settings.json(), authorized: true)
        guard answer.status == 200 else { throw Self.mapRouteError(answer, slug: slug) }
        return try Self.decode(ClassMap.self, answer.body[...], answer)
    }

    /// `DELETE /v1/maps/{slug}`: the map and its pins are gone (the owner's alone).
    public func deleteMap(_ slug: String) async throws(OnTheMapError) {
        let answer = try await send(.DELETE, Self.mapPath(slug), authorized: true)
        guard answer.status == 200 else { throw Self.mapRouteError(answer, slug: slug) }
    }

    // MARK: Members

    /// `POST /v1/maps/{slug}/members`: joins the invite's map; answers the session's place on it: a member,
    /// or `pending` where the map wants approval. Joining a map one is on already changes nothing.
    public func join(_ invite: InviteCode) async throws(OnTheMapError) -> MapMember {
        let body = Self.json(["code": invite.code])
        let answer = try await send(.POST, Self.mapPath(invite.map) + "/members", body: body, authorized: true, secrets: [invite.code])
        guard answer.status == 201 || answer.status == 200 else {
            throw answer.status == 404 ? .invalidInvite : Self.mapRouteError(answer, slug: invite.map)
        }
        return try Self.decode(MapMember.self, answer.body[...], answer)
    }

    /// Joins with an invite as people pass it on: its link, or its bare code for this client's `map`.
    public func join(_ invite: String) async throws(OnTheMapError) -> MapMember {
        guard let code = InviteCode(invite, map: map) else {
            let why = map == nil && !invite.contains("/") ? "a bare code needs its map" : "not an invite link (…/maps/SLUG/join/CODE)"
            throw .refused(message: "\(why): \(invite)", parameter: "code")
        }
        return try await join(code)
    }

    /// `DELETE /v1/maps/{slug}/members/me`: leaves the map, taking one's pins off it. Its owner cannot; they
    /// hand it on or delete it. `notFound` on a public map one is not on.
    public func leave(_ slug: String) async throws(OnTheMapError) {
        let answer = try await send(.DELETE, Self.mapPath(slug) + "/members/me", authorized: true)
        guard answer.status == 200 else { throw Self.mapRouteError(answer, slug: slug, names: "member") }
    }

    /// `GET /v1/maps/{slug}/members`: everyone on the map, for its moderators.
    public func members(_ slug: String) async throws(OnTheMapError) -> [MapMember] {
        let answer = try await send(.GET, Self.mapPath(slug) + "/members", authorized: true)
        guard answer.status == 200 else { throw Self.mapRouteError(answer, slug: slug) }
        return try Self.decode(Results<MapMember>.self, answer.body[...], answer).results
    }

    /// `DELETE /v1/maps/{slug}/members/{key}`: takes someone off the map, their pins with them (a moderator's
    /// call); turns down one who waits for approval. An invite made before cannot bring them back.
    public func removeMember(_ key: String, from slug: String) async throws(OnTheMapError) {
        let answer = try await send(.DELETE, Self.memberPath(slug, key), authorized: true)
        guard answer.status == 200 else { throw Self.mapRouteError(answer, slug: slug, names: "member") }
    }

    /// `PUT /v1/maps/{slug}/members/{key}/role`: the owner gives a role; `owner` hands the map on. A moderator
    /// may make one who waits a `member`: that is approving them.
    public func setRole(_ role: MapRole, of key: String, on slug: String) async throws(OnTheMapError) -> MapMember {
        let body = Self.json(["role": role.rawValue])
        let answer = try await send(.PUT, Self.memberPath(slug, key) + "/role", body: body, authorized: true)
        guard answer.status == 200 else { throw Self.mapRouteError(answer, slug: slug, names: "member") }
        return try Self.decode(MapMember.self, answer.body[...], answer)
    }

    // MARK: Invites

    /// `POST /v1/maps/{slug}/invites`: a new invite (a moderator's call). `expiresIn` 1 minute to 365 days,
    /// `uses` 1 to 10,000; nil for no limit.
    public func createInvite(on slug: String, expiresIn: Duration? = nil, uses: Int? = nil) async throws(OnTheMapError) -> MapInvite {
        var writer = JSONWriter()
        writer.beginObject()
        if let expiresIn { writer.field("expiresIn", Int(expiresIn.components.seconds)) }
        if let uses { writer.field("uses", uses) }
        writer.endObject()
        let answer = try await send(.POST, Self.mapPath(slug) + "/invites", body: Array(writer.buffer.readableBytesView), authorized: true)
        guard answer.status == 201 || answer.status == 200 else { throw Self.mapRouteError(answer, slug: slug) }
        return try Self.decode(MapInvite.self, answer.body[...], answer)
    }

    /// `GET /v1/maps/{slug}/invites`: the invites that still work.
    public func invites(_ slug: String) async throws(OnTheMapError) -> [MapInvite] {
        let answer = try await send(.GET, Self.mapPath(slug) + "/invites", authorized: true)
        guard answer.status == 200 else { throw Self.mapRouteError(answer, slug: slug) }
        return try Self.decode(Results<MapInvite>.self, answer.body[...], answer).results
    }

    /// `DELETE /v1/maps/{slug}/invites/{code}`: the invite stops working; who joined with it stays.
    public func revokeInvite(_ code: String, on slug: String) async throws(OnTheMapError) {
        let answer = try await send(.DELETE, Self.mapPath(slug) + "/invites/\(Self.pathSegment(code))", authorized: true, secrets: [code])
        guard answer.status == 200 else { throw Self.mapRouteError(answer, slug: slug, names: "invite") }
    }

    // MARK: Hidden pins

    /// `GET /v1/maps/{slug}/hidden`: the pins moderators took off the map, with why.
    public func hiddenPins(_ slug: String) async throws(OnTheMapError) -> [HiddenPin] {
        let answer = try await send(.GET, Self.mapPath(slug) + "/hidden", authorized: true)
        guard answer.status == 200 else { throw Self.mapRouteError(answer, slug: slug) }
        return try Self.decode(Results<HiddenPin>.self, answer.body[...], answer).results
    }

    /// `POST /maps/{slug}/v1/StudentLocation/{objectId}/hide`: takes a pin off the map for `reason`, which its
    /// moderators see; its owner can no longer change it until it is back.
    public func hide(_ id: ObjectID, on slug: String, reason: String) async throws(OnTheMapError) -> HiddenPin {
        let answer = try await send(.POST, Self.moderationPath(slug, id, "hide"), body: Self.json(["reason": reason]), authorized: true)
        guard answer.status == 200 else { throw Self.mapRouteError(answer, slug: slug, names: "pin") }
        return try Self.decode(HiddenPin.self, answer.body[...], answer)
    }

    /// `POST /maps/{slug}/v1/StudentLocation/{objectId}/unhide`: brings a hidden pin back as it was hidden.
    public func unhide(_ id: ObjectID, on slug: String, reason: String? = nil) async throws(OnTheMapError) -> StudentLocation {
        let body = reason.map { Self.json(["reason": $0]) }
        let answer = try await send(.POST, Self.moderationPath(slug, id, "unhide"), body: body, authorized: true)
        guard answer.status == 200 else { throw Self.mapRouteError(answer, slug: slug, names: "pin") }
        return try Self.decode(StudentLocation.self, answer.body[...], answer)
    }
}

extension OnTheMapClient {
    struct Results<Item: Decodable>: Decodable {
        var results: [Item]
    }

    static func mapPath(_ slug: String) -> String { "/v1/maps/\(pathSegment(slug))" }

    static func memberPath(_ slug: String, _ key: String) -> String { mapPath(slug) + "/members/\(pathSegment(key))" }

    static func moderationPath(_ slug: String, _ id: ObjectID, _ action: String) -> String {
        "/maps/\(pathSegment(slug))/v1/StudentLocation/\(pathSegment(id.rawValue))/\(action)"
    }

    /// Errors of the map API, Parse-style `{code, error}`. A 404 is the map itself (absent, or not this
    /// caller's to see) unless the call names something on it (`names`: a member, an invite, a pin), whose
    /// absence the gateway's message then tells.
    static func mapRouteError(_ answer: Answer, slug: String?, names item: String? = nil) -> OnTheMapError {
        let body = errorBody(answer)
        let message = body.error ?? "HTTP \(answer.status)"
        switch (answer.status, body.code) {
        case (401, _), (_, 209): return .notLoggedIn(message: message)
        case (403, _): return .notAllowed(message: message)
        case (404, _):
            if let slug, item == nil || !mentions(message, item ?? "") { return .noSuchMap(slug: slug) }
            return .notFound(message: message)
        case (429, _): return .throttled(retryAfter: retryAfter(answer), message: message)
        case (400..<500, _): return .refused(message: message, parameter: nil)
        default: return .serverFault(status: answer.status, message: message)
        }
    }

    /// Whether the gateway's `message` is about `item` ("No such member.", "Object not found." for a pin).
    private static func mentions(_ message: String, _ item: String) -> Bool {
        let text = message.lowercased()
        return text.contains(item) || (item == "pin" && message == pinNotFound)
    }
}
