import ServiceKit
import TestSupport
import Testing

@testable import AuthGateway

/// Who `MAP_CREATORS` lets create class maps: account keys, addresses, providers, and the groups an
/// OpenID Connect provider puts its people in; each mistake in the setting is one clear line at start-up.
@Suite struct MapCreatorsTests {
    static func oidcAccount(_ email: String, groups: [String]) -> Account {
        Account(key: "4000000001", provider: "oidc", email: email, firstName: "Jo", lastName: "Ng", groups: groups)
    }

    static let base = [
        "DATABASE_URL": "postgres://u@127.0.0.1:5432/d", "LOCATIONS_URL": "http://127.0.0.1:8081", "INTERNAL_TOKEN": TestDatabase.internalToken,
    ]
    static let withIssuer = base.merging([
        "OIDC_ISSUER": "https://id.school.example", "OIDC_CLIENT_ID": "on-the-map", "OIDC_CLIENT_SECRET": "s3cret",
        "PUBLIC_URL": "https://map.school.example",
    ]) { $1 }

    @Test func aGroupItemAdmitsTheAccountsInThatGroupAndNoOthers() throws {
        let creators = try MapCreators(setting: "group:teachers, jane@school.example")
        #expect(creators.groups == ["teachers"])
        #expect(creators.emails == ["jane@school.example"])
        #expect(creators.admits(Self.oidcAccount("sam@school.example", groups: ["staff", "teachers"])))
        #expect(creators.admits(Self.oidcAccount("Jane@School.example", groups: [])), "the other items still admit")
        #expect(!creators.admits(Self.oidcAccount("sam@school.example", groups: ["students"])))
        #expect(!creators.admits(Self.oidcAccount("sam@school.example", groups: [])))
        #expect(!creators.admits(Self.oidcAccount("sam@school.example", groups: ["Teachers", "teachers-2027"])), "compared exactly")
        let local = Account(key: "4000000002", provider: "local", email: "teachers@school.example", firstName: "T", lastName: "S")
        #expect(!creators.admits(local), "an address is not a group")
    }

    /// An item that reads as an address or a key is still a group when it says so: `group:` comes first.
    @Test func aGroupNameMayHoldWhatAnAddressOrAProviderHolds() throws {
        let creators = try MapCreators(setting: "group:/school/staff@2027,provider:facebook,group:provider:oidc")
        #expect(creators.groups == ["/school/staff@2027", "provider:oidc"])
        #expect(creators.emails.isEmpty)
        #expect(creators.providers == ["facebook"])
        #expect(!creators.admits(Self.oidcAccount("sam@school.example", groups: [])), "provider:oidc was a group's name")
    }

    @Test func aGroupWithNoNameOrALongerOneThanASignInKeepsIsRefused() throws {
        #expect(try MapCreators(setting: "group:" + String(repeating: "g", count: OIDCGroups.maximumLength)).groups.count == 1)
        for setting in ["group:", "group:  ,jane@school.example", "group:" + String(repeating: "g", count: OIDCGroups.maximumLength + 1)] {
            #expect(throws: ConfigurationError.self, "\(setting)") { try MapCreators(setting: setting) }
        }
    }

    @Test func theGroupsClaimIsASettingOfTheProviderAndGroupsNeedOne() throws {
        #expect(try GatewayConfiguration.fromEnvironment(Self.withIssuer).oidc?.groupsClaim == "groups")
        let roles = Self.withIssuer.merging(["OIDC_GROUPS_CLAIM": "https://school.example/roles"]) { $1 }
        #expect(try GatewayConfiguration.fromEnvironment(roles).oidc?.groupsClaim == "https://school.example/roles")
        let creators = Self.withIssuer.merging(["MAP_CREATORS": "group:teachers"]) { $1 }
        #expect(try GatewayConfiguration.fromEnvironment(creators).mapCreators?.groups == ["teachers"])

        for (environment, message) in [
            (Self.base.merging(["MAP_CREATORS": "jane@school.example,group:teachers"]) { $1 }, "MAP_CREATORS names group:teachers, but"),
            (Self.base.merging(["OIDC_GROUPS_CLAIM": "roles"]) { $1 }, "OIDC_GROUPS_CLAIM is set without OIDC_ISSUER"),
            (Self.withIssuer.merging(["MAP_CREATORS": "group:"]) { $1 }, "group:NAME needs a group name"),
        ] {
            do {
                _ = try GatewayConfiguration.fromEnvironment(environment)
                Issue.record("\(environment) was taken")
            } catch {
                #expect("\(error)".contains(message), "\(error)")
            }
        }
    }
}
