import Foundation
import OnTheMapClient
import OnTheMapShared
import TestSupport
import Testing

/// Class maps from the command line: a teacher and students, each at their own terminal (their own config
/// folder), as a script in a pipe sees it.
@Suite(.serialized) struct MapCommandLineTests {
    @Test func aTeacherInvitesAStudentWhoJoinsWithTheLinkAndPostsOnTheClassMapAlone() async throws {
        try await ClientSystem.with { system in
            let teacher = CLI(gateway: system.url)
            try await teacher.signUp("teacher@example.com", "Tim", "Teacher")
            let create = try await teacher.run(["maps", "create", "ios-2027", "--name", "iOS 2027"])
            #expect(create.status == 0, "\(create)")
            #expect(
                create.output == """
                    created ios-2027 · iOS 2027 · members read · members post · 3 pins each · no approval · you: owner
                    \(system.url)/maps/ios-2027/

                    """, "\(create)")
            let invite = try await teacher.run(["maps", "invite", "--map", "ios-2027"])
            #expect(invite.status == 0, "\(invite)")
            let link = invite.output.trimmingCharacters(in: .newlines)
            #expect(link.contains("/maps/ios-2027/join/") && !link.contains("\n"), "\(invite)")

            let student = CLI(gateway: system.url)
            try await student.signUp("ada@example.com", "Ada", "Lovelace")
            let join = try await student.run(["maps", "join", link])
            #expect(join.status == 0, "\(join)")
            #expect(join.output == "joined ios-2027 as member; post there with: onthemap post --map ios-2027\n")
            let post = try await student.run(["post", "--map", "ios-2027", "--location", "Berlin, Germany", "--link", "ada.example", "--yes"])
            #expect(post.status == 0, "\(post)")
            let id = post.output.trimmingCharacters(in: .newlines)

            let onMap = try await student.run(["list", "--map", "ios-2027"])
            #expect(
                onMap.output == """
                    NAME          PLACE            LINK                 AGE
                    Ada Lovelace  Berlin, Germany  https://ada.example  just now

                    """, "\(onMap)")
            let json = try await teacher.run(["list", "--map", "ios-2027", "--json"])
            #expect(try JSONDecoder().decode(StudentLocationList.self, from: Data(json.output.utf8)).results.map(\.objectId.rawValue) == [id])
            let defaultMap = try await student.run(["list"])
            #expect(defaultMap.status == 0 && defaultMap.output.isEmpty && defaultMap.errors == "no pins yet\n", "\(defaultMap)")

            let members = try await teacher.run(["maps", "members", "--map", "ios-2027"])
            #expect(members.status == 0, "\(members)")
            let rows = members.output.tableCells
            #expect(rows.first == ["NAME", "KEY", "ROLE", "JOINED"], "\(members)")
            #expect(Set(rows.dropFirst().map { [$0[0], $0[2]] }) == [["Tim Teacher", "owner"], ["Ada Lovelace", "member"]], "\(members)")

            let mine = try await student.run(["maps", "list"])
            #expect(mine.output.split(separator: "\n").dropFirst().map { $0.hasPrefix("ios-2027  iOS 2027  member") } == [true], "\(mine)")
        }
    }

    @Test func anOutsiderGetsNoSuchMapAsForAMapThatDoesNotExist() async throws {
        try await ClientSystem.with { system in
            let teacher = CLI(gateway: system.url)
            try await teacher.signUp("teacher@example.com", "Tim", "Teacher")
            #expect(try await teacher.run(["maps", "create", "ios-2027"]).status == 0)
            #expect(try await teacher.run(["post", "--map", "ios-2027", "--location", "Lima, Peru", "--link", "tim.example", "--yes"]).status == 0)

            let outsider = CLI(gateway: system.url)
            try await outsider.signUp("grace@example.com", "Grace", "Hopper")
            let message = { (slug: String) in
                "no map \(slug) on \(system.url), or it is for its members only: check the name, log in (onthemap login), "
                    + "or join it with an invite (onthemap maps join URL)\n"
            }
            for slug in ["ios-2027", "no-such-map"] {
                let list = try await outsider.run(["list", "--map", slug])
                #expect(list.status == 12 && list.output.isEmpty && list.errors == message(slug), "\(list)")
                let post = try await outsider.run(["post", "--map", slug, "--location", "Berlin, Germany", "--link", "grace.example", "--yes"])
                #expect(post.status == 12 && post.errors == message(slug), "\(post)")
            }
            let anonymous = try await CLI(gateway: system.url).run(["list", "--map", "ios-2027"])
            #expect(anonymous.status == 12 && anonymous.errors == message("ios-2027"), "\(anonymous)")
            let capitals = try await outsider.run(["list", "--map", "IOS-2027"])
            #expect(capitals.status == 64 && capitals.errors.contains("--map IOS-2027: slugs are lower case; did you mean ios-2027?"), "\(capitals)")
        }
    }

    @Test func aStudentWhoLeavesNoLongerSeesTheMapAndItsChoiceIsForgotten() async throws {
        try await ClientSystem.with { system in
            let teacher = CLI(gateway: system.url)
            try await teacher.signUp("teacher@example.com", "Tim", "Teacher")
            #expect(try await teacher.run(["maps", "create", "ios-2027"]).status == 0)
            let link = try await teacher.run(["maps", "invite", "--map", "ios-2027"]).output.trimmingCharacters(in: .newlines)

            let student = CLI(gateway: system.url)
            try await student.signUp("ada@example.com", "Ada", "Lovelace")
            let join = try await student.run(["maps", "join", link, "--use"])
            #expect(join.status == 0 && join.output == "joined ios-2027 as member; post there with: onthemap post\n", "\(join)")
            #expect(try await student.run(["post", "--location", "Berlin, Germany", "--link", "ada.example", "--yes"]).status == 0)
            #expect(try await student.run(["list"]).output.contains("Ada Lovelace"), "the map kept by --use")

            let declined = try await student.run(["maps", "leave"])
            #expect(declined.status == 64, "no terminal to ask, and no --yes: \(declined)")
            let leave = try await student.run(["maps", "leave", "--yes"])
            #expect(leave.status == 0 && leave.output == "left ios-2027; the commands now work on the gateway's own map\n", "\(leave)")
            let after = try await student.run(["list", "--map", "ios-2027"])
            #expect(after.status == 12, "\(after)")
            let defaultMap = try await student.run(["list"])
            #expect(defaultMap.status == 0 && defaultMap.errors == "no pins yet\n", "\(defaultMap)")
        }
    }

    @Test func mapsUseKeepsTheMapForTheOtherCommandsUntilDefault() async throws {
        try await ClientSystem.with { system in
            let teacher = CLI(gateway: system.url)
            try await teacher.signUp("teacher@example.com", "Tim", "Teacher")
            #expect(try await teacher.run(["maps", "create", "ios-2027"]).status == 0)
            #expect(try await teacher.run(["post", "--location", "Lima, Peru", "--link", "tim.example", "--yes"]).status == 0)

            let use = try await teacher.run(["maps", "use", "ios-2027"])
            #expect(use.status == 0, "\(use)")
            #expect(use.output == "the commands now work on ios-2027 (ios-2027) on \(system.url); back with: onthemap maps use --default\n")
            #expect(try await teacher.run(["maps", "use"]).output == "the commands work on ios-2027 on \(system.url)\n")
            #expect(try await teacher.run(["post", "--location", "Berlin, Germany", "--link", "tim.example", "--yes"]).status == 0)
            #expect(try await teacher.run(["list"]).output.contains("Berlin, Germany"))
            #expect(!(try await teacher.run(["list"]).output.contains("Lima, Peru")))
            #expect(try await teacher.run(["list", "--map", "default"]).output.contains("Lima, Peru"))
            let invite = try await teacher.run(["maps", "invite", "--expires", "7d", "--uses", "30"])
            #expect(invite.status == 0 && invite.output.contains("/maps/ios-2027/join/"), "the kept map needs no --map: \(invite)")

            let back = try await teacher.run(["maps", "use", "--default"])
            #expect(back.status == 0 && back.output == "the commands now work on the gateway's own map on \(system.url)\n", "\(back)")
            #expect(try await teacher.run(["list"]).output.contains("Lima, Peru"))
            let none = try await teacher.run(["maps", "invite"])
            #expect(none.status == 64 && none.errors == "which map? name it with --map SLUG, or choose one with: onthemap maps use SLUG\n", "\(none)")

            let unknown = try await teacher.run(["maps", "use", "no-such-map"])
            #expect(unknown.status == 12, "\(unknown)")
            #expect(try await teacher.run(["maps", "use"]).output == "the commands work on the gateway's own map on \(system.url)\n")
        }
    }

    @Test func invitesAreListedAndARevokedOneNoLongerLetsAnyoneIn() async throws {
        try await ClientSystem.with { system in
            let teacher = CLI(gateway: system.url)
            try await teacher.signUp("teacher@example.com", "Tim", "Teacher")
            #expect(try await teacher.run(["maps", "create", "ios-2027", "--use"]).status == 0)
            let link = try await teacher.run(["maps", "invite", "--uses", "30"]).output.trimmingCharacters(in: .newlines)
            let code = try #require(InviteCode(link)).code

            let invites = try await teacher.run(["maps", "invites"])
            #expect(invites.status == 0, "\(invites)")
            let lines = invites.output.split(separator: "\n")
            #expect(lines.first?.hasPrefix("CODE") == true && lines.count == 2, "\(invites)")
            #expect(lines.last?.hasPrefix("\(code)  0 of 30  never    \(link)") == true, "\(invites)")

            let revoke = try await teacher.run(["maps", "revoke-invite", code])
            #expect(revoke.status == 0 && revoke.output == "revoked the invite \(code) to ios-2027\n", "\(revoke)")
            let empty = try await teacher.run(["maps", "invites"])
            #expect(empty.output.isEmpty && empty.errors == "no invite to ios-2027 works now; make one with: onthemap maps invite\n", "\(empty)")

            let student = CLI(gateway: system.url)
            try await student.signUp("ada@example.com", "Ada", "Lovelace")
            let join = try await student.run(["maps", "join", link])
            #expect(join.status == 9, "\(join)")
            #expect(join.errors == "that invite does not work: it is wrong, revoked, expired or used up; ask for a new one\n")
            let dashed = try await student.run(["maps", "join", "--map", "ios-2027", "-" + String(repeating: "A", count: 21)])
            #expect(dashed.status == 9, "a code may begin with -, and is no option: \(dashed)")
            let bare = try await student.run(["maps", "join", code])
            #expect(bare.status == 64 && bare.errors == "an invite's code alone needs its map: --map SLUG: \(code)\n", "\(bare)")
        }
    }

    @Test func aModeratorHidesAPinWithAReasonListsItAndBringsItBack() async throws {
        try await ClientSystem.with { system in
            let teacher = CLI(gateway: system.url)
            try await teacher.signUp("teacher@example.com", "Tim", "Teacher")
            #expect(try await teacher.run(["maps", "create", "ios-2027", "--use"]).status == 0)
            let link = try await teacher.run(["maps", "invite"]).output.trimmingCharacters(in: .newlines)
            let student = CLI(gateway: system.url)
            let ada = try await student.signUp("ada@example.com", "Ada", "Lovelace", system: system)
            #expect(try await student.run(["maps", "join", link, "--use"]).status == 0)
            let id = try await student.run(["post", "--location", "Berlin, Germany", "--link", "ada.example", "--yes"]).output
                .trimmingCharacters(in: .newlines)

            let notAllowed = try await student.run(["maps", "hide", id, "--reason", "mine"])
            #expect(notAllowed.status == 13 && notAllowed.errors.hasPrefix("not allowed: "), "\(notAllowed)")

            let hide = try await teacher.run(["maps", "hide", id, "--reason", "a test pin"])
            #expect(hide.status == 0, "\(hide)")
            #expect(hide.output == "hid \(id) (Ada Lovelace · Berlin, Germany · https://ada.example) on ios-2027: a test pin\n")
            #expect(try await student.run(["list"]).errors == "no pins on ios-2027 yet\n")
            let hidden = try await teacher.run(["maps", "hidden"])
            #expect(
                hidden.output.tableCells
                    == [["OBJECTID", "NAME", "PLACE", "REASON", "HIDDEN"], [id, "Ada Lovelace", "Berlin, Germany", "a test pin", "just now"]],
                "\(hidden)")

            let unhide = try await teacher.run(["maps", "unhide", id])
            #expect(
                unhide.status == 0 && unhide.output == "brought back \(id) (Ada Lovelace · Berlin, Germany · https://ada.example) on ios-2027\n",
                "\(unhide)")
            #expect(try await student.run(["list"]).output.contains("Ada Lovelace"))

            let key = try #require(ada.session?.accountKey)
            let role = try await teacher.run(["maps", "role", key, "moderator"])
            #expect(role.status == 0 && role.output == "Ada Lovelace (\(key)) is now moderator on ios-2027\n", "\(role)")
            let teacherKey = try await teacher.run(["whoami"]).output.firstMatch(of: #/key (\S+)/#).map { String($0.1) }
            let remove = try await student.run(["maps", "remove", try #require(teacherKey), "--yes"])
            #expect(remove.status != 0, "a moderator cannot remove the owner: \(remove)")
        }
    }

    @Test func theOwnerChangesTheSettingsAndDeletesTheMap() async throws {
        try await ClientSystem.with { system in
            let teacher = CLI(gateway: system.url)
            try await teacher.signUp("teacher@example.com", "Tim", "Teacher")
            #expect(try await teacher.run(["maps", "create", "ios-2027", "--name", "iOS 2027", "--use"]).status == 0)
            let set = try await teacher.run(["maps", "set", "--read", "public", "--post", "signed-in", "--pins-per-student", "5", "--approval"])
            #expect(set.status == 0, "\(set)")
            #expect(set.output == "changed ios-2027 · iOS 2027 · anyone read · signed-in post · 5 pins each · members approved · you: owner\n")
            let show = try await CLI(gateway: system.url).run(["maps", "show", "--map", "ios-2027"])
            #expect(
                show.output == "ios-2027 · iOS 2027 · anyone read · signed-in post · 5 pins each · members approved\n\(system.url)/maps/ios-2027/\n",
                "\(show)")

            let refused = try await teacher.run(["maps", "delete"])
            #expect(refused.status == 64 && refused.errors == "no terminal to confirm deleting ios-2027; pass --yes to delete it\n", "\(refused)")
            let delete = try await teacher.run(["maps", "delete", "--yes"])
            #expect(delete.status == 0 && delete.output == "deleted the map ios-2027; the commands now work on the gateway's own map\n", "\(delete)")
            #expect(try await teacher.run(["list", "--map", "ios-2027"]).status == 12)
        }
    }
}

extension String {
    /// The cells of an aligned table, a row per line: columns are two spaces or more apart.
    var tableCells: [[String]] {
        split(separator: "\n").map { $0.split(separator: #/ {2,}/#).map(String.init) }
    }
}
