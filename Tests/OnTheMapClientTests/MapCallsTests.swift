import Foundation
import OnTheMapClient
import OnTheMapShared
import TestSupport
import Testing

/// The class maps' calls against the real gateway: a teacher's map, its invites and members, and the pins
/// on it, as a program built on the library sees them.
@Suite(.serialized) struct MapCallsTests {
    static let membersOnly = MapSettings(name: "iOS 2027", read: .members, post: .members)

    @Test func aStudentJoinsAMembersOnlyMapWithTheInviteLinkAndItsPinsStayOnIt() async throws {
        try await ClientSystem.with { system in
            let teacher = try await system.student("teacher@example.com", firstName: "Tim", lastName: "Teacher")
            let map = try await teacher.createMap(slug: "ios-2027", settings: Self.membersOnly)
            #expect(map.slug == "ios-2027" && map.name == "iOS 2027" && map.role == .owner && map.pinsPerStudent == 3, "\(map)")
            #expect(map.url == "/maps/ios-2027/")
            let invite = try await teacher.createInvite(on: "ios-2027")
            #expect(invite.url.hasSuffix("/maps/ios-2027/join/\(invite.code)"), "\(invite)")

            var ada = try await system.student("ada@example.com")
            let joined = try await ada.join(invite.url)
            #expect(joined.role == .member && joined.firstName == "Ada", "\(joined)")
            ada.map = "ios-2027"
            let pin = try await ada.postPin("Berlin, Germany")

            #expect(try await ada.list().map(\.objectId) == [pin])
            #expect(try await ada.location(pin).mapString == "Berlin, Germany")
            #expect(try await system.client().list().isEmpty, "the default map shows no class map's pin")
            #expect(try await ada.myMaps().map(\.slug) == ["ios-2027"])
            #expect(try await teacher.members("ios-2027").map(\.role).sorted { $0.rawValue < $1.rawValue } == [.member, .owner])
        }
    }

    @Test func aMembersOnlyMapIsNoSuchMapToOutsidersAsOneThatDoesNotExist() async throws {
        try await ClientSystem.with { system in
            let teacher = try await system.student("teacher@example.com", firstName: "Tim", lastName: "Teacher")
            _ = try await teacher.createMap(slug: "ios-2027", settings: Self.membersOnly)
            var member = teacher
            member.map = "ios-2027"
            let pin = try await member.postPin("Lima, Peru")

            var grace = try await system.student("grace@example.com", firstName: "Grace", lastName: "Hopper")
            var anonymous = system.client()
            for slug in ["ios-2027", "no-such-map"] {
                grace.map = slug
                anonymous.map = slug
                #expect(await thrownError { try await grace.list() } == .noSuchMap(slug: slug))
                #expect(await thrownError { try await anonymous.list() } == .noSuchMap(slug: slug))
                #expect(await thrownError { try await grace.location(pin) } == .noSuchMap(slug: slug))
                #expect(await thrownError { try await grace.postPin("Berlin") } == .noSuchMap(slug: slug))
                #expect(await thrownError { try await grace.classMap(slug) } == .noSuchMap(slug: slug))
                #expect(await thrownError { try await grace.members(slug) } == .noSuchMap(slug: slug))
            }
        }
    }

    @Test func aLeftMemberNoLongerSeesTheMap() async throws {
        try await ClientSystem.with { system in
            let teacher = try await system.student("teacher@example.com", firstName: "Tim", lastName: "Teacher")
            _ = try await teacher.createMap(slug: "ios-2027", settings: Self.membersOnly)
            let invite = try await teacher.createInvite(on: "ios-2027")
            var ada = try await system.student("ada@example.com")
            ada.map = "ios-2027"
            _ = try await ada.join(invite.code)
            #expect(try await ada.list().isEmpty)
            try await ada.leave("ios-2027")
            #expect(await thrownError { try await ada.list() } == .noSuchMap(slug: "ios-2027"))
            #expect(try await ada.myMaps().isEmpty)
            #expect(await thrownError { try await teacher.leave("ios-2027") } != nil, "the owner hands the map on or deletes it")
        }
    }

    @Test func aWrongRevokedOrUsedUpInviteIsInvalid() async throws {
        try await ClientSystem.with { system in
            let teacher = try await system.student("teacher@example.com", firstName: "Tim", lastName: "Teacher")
            _ = try await teacher.createMap(slug: "ios-2027", settings: Self.membersOnly)
            let ada = try await system.student("ada@example.com")
            let grace = try await system.student("grace@example.com", firstName: "Grace", lastName: "Hopper")

            #expect(await thrownError { try await ada.join(InviteCode(map: "ios-2027", code: "AAAAAAAAAAAAAAAAAAAAAA")) } == .invalidInvite)
            #expect(await thrownError { try await ada.join(InviteCode(map: "no-such-map", code: "AAAAAAAAAAAAAAAAAAAAAA")) } == .invalidInvite)

            let revoked = try await teacher.createInvite(on: "ios-2027")
            #expect(try await teacher.invites("ios-2027").map(\.code) == [revoked.code])
            try await teacher.revokeInvite(revoked.code, on: "ios-2027")
            #expect(try await teacher.invites("ios-2027").isEmpty)
            #expect(await thrownError { try await ada.join(revoked.url) } == .invalidInvite)

            let once = try await teacher.createInvite(on: "ios-2027", expiresIn: .seconds(3600), uses: 1)
            #expect(once.uses == 1 && once.used == 0 && once.expiresAt != nil, "\(once)")
            _ = try await ada.join(once.url)
            #expect(await thrownError { try await grace.join(once.url) } == .invalidInvite)
        }
    }

    @Test func whatARoleDoesNotAllowIsNotAllowed() async throws {
        try await ClientSystem.with { system in
            let teacher = try await system.student("teacher@example.com", firstName: "Tim", lastName: "Teacher")
            _ = try await teacher.createMap(slug: "ios-2027", settings: Self.membersOnly)
            let ada = try await system.student("ada@example.com")
            _ = try await ada.join(try await teacher.createInvite(on: "ios-2027").url)

            func isNotAllowed(_ call: () async throws -> Void) async -> Bool {
                if case .notAllowed = await thrownError(call) { return true }
                return false
            }
            #expect(await isNotAllowed { _ = try await ada.createInvite(on: "ios-2027") })
            #expect(await isNotAllowed { _ = try await ada.members("ios-2027") })
            #expect(await isNotAllowed { _ = try await ada.updateMap("ios-2027", MapSettings(name: "Mine now")) })
            #expect(await isNotAllowed { try await ada.deleteMap("ios-2027") })

            // A public map where members post: anyone reads it, an outsider may not post.
            _ = try await teacher.createMap(slug: "open-day", settings: MapSettings(name: "Open day", read: .public, post: .members))
            var grace = try await system.student("grace@example.com", firstName: "Grace", lastName: "Hopper")
            grace.map = "open-day"
            #expect(try await grace.list().isEmpty)
            #expect(try await system.client().classMap("open-day").role == nil)
            #expect(await isNotAllowed { _ = try await grace.postPin("Berlin") })
            _ = try await teacher.updateMap("open-day", MapSettings(post: .signedIn))
            _ = try await grace.postPin("Berlin")
            #expect(try await grace.list().map(\.firstName) == ["Grace"])
        }
    }

    @Test func theOwnerMakesAModeratorWhoHidesAndBringsBackAPin() async throws {
        try await ClientSystem.with { system in
            let teacher = try await system.student("teacher@example.com", firstName: "Tim", lastName: "Teacher")
            _ = try await teacher.createMap(slug: "ios-2027", settings: Self.membersOnly)
            let invite = try await teacher.createInvite(on: "ios-2027")
            var ada = try await system.student("ada@example.com")
            var grace = try await system.student("grace@example.com", firstName: "Grace", lastName: "Hopper")
            _ = try await ada.join(invite.url)
            _ = try await grace.join(invite.url)
            (ada.map, grace.map) = ("ios-2027", "ios-2027")
            let pin = try await grace.postPin("Lima, Peru")

            let key = try #require(ada.session?.accountKey)
            let moderator = try await teacher.setRole(.moderator, of: key, on: "ios-2027")
            #expect(moderator.role == .moderator && moderator.key == key)
            let hidden = try await ada.hide(pin, on: "ios-2027", reason: "a test pin")
            #expect(hidden.pin.objectId == pin && hidden.reason == "a test pin" && hidden.hiddenBy == key, "\(hidden)")
            #expect(try await grace.list().isEmpty)
            #expect(try await ada.hiddenPins("ios-2027").map(\.pin.objectId) == [pin])

            let back = try await ada.unhide(pin, on: "ios-2027")
            #expect(back.objectId == pin && back.mapString == "Lima, Peru")
            #expect(try await grace.list().map(\.objectId) == [pin])
            #expect(try await ada.hiddenPins("ios-2027").isEmpty)

            try await ada.removeMember(try #require(grace.session?.accountKey), from: "ios-2027")
            #expect(await thrownError { try await grace.list() } == .noSuchMap(slug: "ios-2027"))
            #expect(await thrownError { try await grace.join(invite.url) } == .invalidInvite, "an invite made before the removal")
        }
    }

    @Test func aMapThatApprovesItsMembersKeepsANewcomerPendingUntilAModeratorLetsThemIn() async throws {
        try await ClientSystem.with { system in
            let teacher = try await system.student("teacher@example.com", firstName: "Tim", lastName: "Teacher")
            var settings = Self.membersOnly
            settings.approval = true
            _ = try await teacher.createMap(slug: "ios-2027", settings: settings)
            var ada = try await system.student("ada@example.com")
            ada.map = "ios-2027"
            #expect(try await ada.join(try await teacher.createInvite(on: "ios-2027").url).role == .pending)
            #expect(try await ada.myMaps().map(\.role) == [.pending])
            #expect(await thrownError { try await ada.list() } == .noSuchMap(slug: "ios-2027"))
            _ = try await teacher.setRole(.member, of: try #require(ada.session?.accountKey), on: "ios-2027")
            #expect(try await ada.list().isEmpty)
        }
    }

    @Test func aClassMapsLiveChangesAreItsOwn() async throws {
        try await ClientSystem.with { system in
            let teacher = try await system.student("teacher@example.com", firstName: "Tim", lastName: "Teacher")
            _ = try await teacher.createMap(slug: "ios-2027", settings: Self.membersOnly)
            var onMap = teacher
            onMap.map = "ios-2027"
            let statuses = LockedLines()
            var updates = onMap.liveChanges { status in
                if case .connected = status { statuses.append("connected") }
            }.makeAsyncIterator()
            try #require(await statuses.contains("connected", within: .seconds(10)), "never connected")

            _ = try await teacher.postPin("Paris, France")
            let pin = try await onMap.postPin("Berlin, Germany")
            guard case .change(let change)? = try await updates.next() else {
                Issue.record("the feed ended")
                return
            }
            #expect(change.location?.objectId == pin, "the default map's pin came first: \(change)")

            var outsider = try await system.student("grace@example.com", firstName: "Grace", lastName: "Hopper")
            outsider.map = "ios-2027"
            var refused = outsider.liveChanges().makeAsyncIterator()
            do {
                _ = try await refused.next()
                Issue.record("an outsider followed a members-only map")
            } catch let error as OnTheMapError {
                #expect(error == .noSuchMap(slug: "ios-2027"))
            }
        }
    }

    @Test func oneLoginWorksOnEveryMapAndAClassMapKeepsItsPinsPast() async throws {
        try await ClientSystem.with { system in
            let teacher = try await system.student("teacher@example.com", firstName: "Tim", lastName: "Teacher")
            _ = try await teacher.createMap(slug: "ios-2027", settings: Self.membersOnly)
            var onMap = system.client()
            onMap.map = "ios-2027"
            onMap.session = try await onMap.logIn(email: "teacher@example.com", password: "correct horse battery")
            #expect(try await onMap.me().fullName == "Tim Teacher")
            let pin = try await onMap.postPin("Berlin, Germany")
            _ = try await onMap.update(pin, LocationInput(mapString: "Paris, France", latitude: 48.8566, longitude: 2.3522))
            #expect(try await onMap.history(pin).results.map(\.event) == [.posted, .moved])
            let geoJSON = String(decoding: try await onMap.geoJSON(), as: UTF8.self)
            #expect(geoJSON.contains("Paris, France") && geoJSON.contains("FeatureCollection"), "\(geoJSON)")

            var elsewhere = onMap
            elsewhere.map = nil
            #expect(try await elsewhere.me().fullName == "Tim Teacher", "the session a class map opened works on the default map")
            #expect(await thrownError { try await elsewhere.history(pin) } == .notFound(message: "Object not found."))
            try await onMap.logOut()
            #expect(await thrownError { try await teacher.me() } == nil, "logging out ends that session alone")
            #expect(await thrownError { try await elsewhere.me() } == .notLoggedIn(message: "your session has ended"))
        }
    }

    @Test func anInviteIsReadFromItsLinkOrFromItsCodeAndTheMapNamedApart() {
        let code = "q7Xc0mZ3o9WbTn5KdL1fAg"
        #expect(InviteCode("https://map.example.edu/maps/ios-2027/join/\(code)") == InviteCode(map: "ios-2027", code: code))
        #expect(InviteCode("http://127.0.0.1:8080/maps/ios-2027/join/\(code)/?utm=x#top") == InviteCode(map: "ios-2027", code: code))
        #expect(InviteCode("/maps/ios-2027/join/\(code)", map: "other") == InviteCode(map: "ios-2027", code: code), "the link's own map wins")
        #expect(InviteCode("  \(code)\n", map: "ios-2027") == InviteCode(map: "ios-2027", code: code))
        #expect(InviteCode(code) == nil, "a code alone needs its map")
        #expect(InviteCode("https://map.example.edu/maps/ios-2027/") == nil)
        #expect(InviteCode("https://map.example.edu/join/\(code)") == nil)
        #expect(InviteCode("", map: "ios-2027") == nil)
    }
}
