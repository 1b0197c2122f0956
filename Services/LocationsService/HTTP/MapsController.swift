import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import OnTheMapShared
import ServiceKit

/// `/v1/maps`: create, read, change and delete class maps, their members and invites, and read what their
/// moderators hid. Every route but reading one map needs the acting account (`X-Actor`); whatever the
/// caller may not read answers 404, as a map that does not exist.
struct MapsController<Context: RequestContext>: Sendable {
    let maps: MapCommands
    /// Where a map's deletion is recorded once done, for a restore to delete it again (nil: not recorded).
    var ledger: RestoreLedger? = nil

    static var maximumBodySize: Int { 4 * 1024 }

    func addRoutes(to group: RouterGroup<Context>) {
        group.post(use: create)
        group.get(use: mine)
        group.get(":slug", use: show)
        group.patch(":slug", use: change)
        group.delete(":slug", use: delete)
        group.get(":slug/access", use: access)
        group.get(":slug/members", use: members)
        group.post(":slug/members", use: join)
        group.delete(":slug/members/:key", use: depart)
        group.put(":slug/members/:key/role", use: setRole)
        group.get(":slug/invites", use: invites)
        group.post(":slug/invites", use: invite)
        group.delete(":slug/invites/:code", use: revoke)
        group.get(":slug/hidden", use: hidden)
    }

    @Sendable func create(_ request: Request, context: Context) async throws -> Response {
        let actor = try Self.actor(request)
        let settings = try await Self.body(request, as: MapCommands.Settings.self)
        let map = try await maps.create(settings, actor: actor, metadata: Self.metadata(request, actor: actor))
        return .json(MapWire.map(map, role: .owner, defaultPinsPerStudent: maps.defaultPinsPerStudent), status: .created)
    }

    @Sendable func mine(_ request: Request, context: Context) async throws -> Response {
        let actor = try Self.actor(request)
        return .json(MapWire.maps(try await maps.store.maps(of: actor.key), defaultPinsPerStudent: maps.defaultPinsPerStudent))
    }

    /// One map, for whoever may read it; a pending member sees it too (and their role).
    @Sendable func show(_ request: Request, context: Context) async throws -> Response {
        let access = try await maps.access(try Self.slug(context), actor: Self.optionalActor(request))
        return .json(MapWire.map(access.map, role: access.role, defaultPinsPerStudent: maps.defaultPinsPerStudent))
    }

    @Sendable func change(_ request: Request, context: Context) async throws -> Response {
        let actor = try Self.actor(request)
        let settings = try await Self.body(request, as: MapCommands.Settings.self)
        let access = try await maps.change(try Self.slug(context), settings, actor: actor, metadata: Self.metadata(request, actor: actor))
        return .json(MapWire.map(access.map, role: access.role, defaultPinsPerStudent: maps.defaultPinsPerStudent))
    }

    @Sendable func delete(_ request: Request, context: Context) async throws -> Response {
        let actor = try Self.actor(request)
        let slug = try Self.slug(context)
        _ = try await maps.delete(slug, actor: actor, metadata: Self.metadata(request, actor: actor))
        ledger?.appendOrReport(.init(kind: .mapDeleted, map: slug.rawValue), undone: "bring the deleted map back", logger: context.logger)
        return .json(ByteBuffer(string: "{}"))
    }

    /// What the caller may do on the map: for the gateway, before it streams a map's changes to someone.
    @Sendable func access(_ request: Request, context: Context) async throws -> Response {
        let access = try await maps.readable(try Self.slug(context), actor: Self.optionalActor(request))
        var json = JSONWriter()
        json.beginObject()
        for (name, value) in [("read", access.canRead), ("post", access.canPost), ("moderate", access.canModerate)] {
            json.key(name)
            json.bool(value)
        }
        json.key("role")
        if let role = access.role { json.string(role.rawValue) } else { json.null() }
        json.endObject()
        return .json(json.buffer)
    }

    @Sendable func members(_ request: Request, context: Context) async throws -> Response {
        let slug = try Self.slug(context)
        _ = try await maps.moderated(slug, actor: try Self.actor(request))
        return .json(MapWire.members(try await maps.store.members(of: slug)))
    }

    /// `{"code"}`: 201 and the new member, or 200 and the member the caller already was.
    @Sendable func join(_ request: Request, context: Context) async throws -> Response {
        let actor = try Self.actor(request)
        guard let code = try await Self.body(request, as: JoinBody.self).code else { throw LocationError.invalid("code is required.") }
        // A slug that names no map is, to a guest, one more invite that lets no one in.
        guard let slug = MapSlug(try context.parameters.require("slug")) else { throw MapCommands.noInvite }
        let (member, created) = try await maps.join(slug, code: code, actor: actor, metadata: Self.metadata(request, actor: actor))
        return .json(MapWire.member(member), status: created ? .created : .ok)
    }

    /// `members/me`: the caller leaves; `members/{key}`: a moderator removes them.
    @Sendable func depart(_ request: Request, context: Context) async throws -> Response {
        let actor = try Self.actor(request)
        let slug = try Self.slug(context)
        let key = try context.parameters.require("key")
        if key == "me" || key == actor.key {
            try await maps.leave(slug, actor: actor, metadata: Self.metadata(request, actor: actor))
        } else {
            _ = try await maps.remove(key, from: slug, actor: actor, metadata: Self.metadata(request, actor: actor))
        }
        return .json(ByteBuffer(string: "{}"))
    }

    @Sendable func setRole(_ request: Request, context: Context) async throws -> Response {
        let actor = try Self.actor(request)
        guard let role = try await Self.body(request, as: RoleBody.self).role else { throw LocationError.invalid("role is required.") }
        let member = try await maps.setRole(
            try context.parameters.require("key"), to: role, on: try Self.slug(context), actor: actor, metadata: Self.metadata(request, actor: actor))
        return .json(MapWire.member(member))
    }

    @Sendable func invites(_ request: Request, context: Context) async throws -> Response {
        let slug = try Self.slug(context)
        return .json(MapWire.invites(try await maps.liveInvites(slug, actor: try Self.actor(request)), slug: slug))
    }

    /// Optional `{"expiresIn": seconds, "uses": N}`.
    @Sendable func invite(_ request: Request, context: Context) async throws -> Response {
        let actor = try Self.actor(request)
        let slug = try Self.slug(context)
        let body = try await Self.collect(request)
        let asked = body.readableBytes == 0 ? MapCommands.InviteRequest() : try Self.decode(body, as: MapCommands.InviteRequest.self)
        let invite = try await maps.invite(slug, asked, actor: actor, metadata: Self.metadata(request, actor: actor))
        return .json(MapWire.invite(invite, slug: slug), status: .created)
    }

    @Sendable func revoke(_ request: Request, context: Context) async throws -> Response {
        let actor = try Self.actor(request)
        try await maps.revoke(
            try context.parameters.require("code"), on: try Self.slug(context), actor: actor, metadata: Self.metadata(request, actor: actor))
        return .json(ByteBuffer(string: "{}"))
    }

    @Sendable func hidden(_ request: Request, context: Context) async throws -> Response {
        let slug = try Self.slug(context)
        _ = try await maps.moderated(slug, actor: try Self.actor(request))
        return .json(MapWire.hiddenPins(try await maps.store.hidden(on: slug)))
    }

    // MARK: Reading the request

    /// The slug in the path; one that is not a slug names no map.
    private static func slug(_ context: Context) throws -> MapSlug {
        guard let slug = MapSlug(try context.parameters.require("slug")) else { throw MapCommands.notFound }
        return slug
    }

    private static func optionalActor(_ request: Request) -> Actor? {
        ActorHeader.actor(request.headers[.actor])
    }

    private static func actor(_ request: Request) throws(LocationError) -> Actor {
        guard let actor = optionalActor(request) else { throw .missingActor }
        return actor
    }

    private static func metadata(_ request: Request, actor: Actor) -> EventMetadata {
        EventMetadata(
            actor: actor, requestId: request.headers[.requestID], idempotencyKey: nil,
            userAgent: request.headers[.userAgent], requestHash: nil)
    }

    private static func collect(_ request: Request) async throws -> ByteBuffer {
        do {
            return try await request.body.collect(upTo: maximumBodySize)
        } catch is NIOTooManyBytesError {
            throw LocationError.bodyTooLarge(limit: maximumBodySize)
        } catch let error as HTTPError where error.status == .contentTooLarge {
            throw LocationError.bodyTooLarge(limit: maximumBodySize)
        }
    }

    private static func body<T: Decodable>(_ request: Request, as type: T.Type) async throws -> T {
        try decode(try await collect(request), as: type)
    }

    private static func decode<T: Decodable>(_ body: ByteBuffer, as type: T.Type) throws -> T {
        do {
            return try JSONDecoder().decode(T.self, from: Data(body.readableBytesView))
        } catch let DecodingError.typeMismatch(_, context) {
            throw LocationError.invalid("\(context.codingPath.map(\.stringValue).joined(separator: ".")) has the wrong type.")
        } catch {
            throw LocationError.invalid("The body must be a JSON object.")
        }
    }
}

struct JoinBody: Decodable {
    var code: String?
}

struct RoleBody: Decodable {
    var role: String?
}
