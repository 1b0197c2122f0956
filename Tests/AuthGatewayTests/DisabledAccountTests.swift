import HTTPTypes
import HummingbirdTesting
import OnTheMapShared
import PostgresNIO
import ServiceKit
import TestSupport
import Testing

@testable import AuthGateway

extension TimedGatewayTests {
    /// An operator disables an account (`auth-gateway accounts disable`) and enables it again.
    @Suite struct DisabledAccountTests {
        static let login = #"{"udacity":{"username":"disabled@example.com","password":"correct horse battery"}}"#

        @Test func aDisabledAccountsSessionIsRefusedOnEveryReplicaAndItCannotLogInUntilEnabled() async throws {
            // Two gateways on one database, each holding the session in its cache before the account is disabled.
            try await withGateway { first, fixture in
                let student = try await first.signedUpAndLoggedIn("disabled@example.com")
                try await withSecondReplica(of: fixture) { second in
                    _ = try await first.postPin(as: student)
                    _ = try await second.postPin(as: student)

                    let disabled = try await operatorAccounts(
                        ["disable", " Disabled@Example.COM", "--reason", "spam", "--operator", "ops"], on: fixture.database)
                    #expect(disabled.status == 0)
                    #expect(
                        disabled.output == "disabled account \(student.key) (disabled@example.com): its sessions have ended and it cannot log in\n")
                    for replica in [first, second] {
                        // Each replica hears of it by NOTIFY, a moment after the command commits.
                        let refused = try await waitFor(within: .seconds(2)) {
                            try await replica.send(.delete, "/v1/StudentLocation/none", headers: [student.bearer]).status == .unauthorized
                        }
                        #expect(refused != nil, "the disabled account's session still wrote 2 s after the command")
                    }
                    let post = try await second.send(
                        .post, "/v1/StudentLocation", body: #"{"mapString":"x","mediaURL":"https://a.example","latitude":1,"longitude":1}"#,
                        headers: [student.bearer])
                    #expect(post.status == .unauthorized)
                    #expect(post.body == #"{"code":209,"error":"Log in to post, change or delete a pin."}"#)

                    let refusedLogin = try await first.send(.post, "/v1/session", body: Self.login)
                    #expect(refusedLogin.status == .forbidden)
                    #expect(
                        refusedLogin.body
                            == ")]}'\n{\"status\":403,\"error\":\"This account has been disabled; ask the people who run this server to enable it.\"}"
                    )
                    // Only the right password learns that the account is disabled.
                    let wrong = try await second.send(
                        .post, "/v1/session", body: #"{"udacity":{"username":"disabled@example.com","password":"wrong password"}}"#)
                    #expect(wrong.body == ")]}'\n{\"status\":403,\"error\":\"Account not found or invalid credentials.\"}")
                    let again = try await second.send(
                        .post, "/v1/accounts", body: #"{"email":"disabled@example.com","password":"another password","firstName":"A","lastName":"B"}"#
                    )
                    #expect(again.status == .conflict)
                    #expect(try await operatorAccounts(["disable", "disabled@example.com", "--operator", "ops"], on: fixture.database).status == 1)

                    let enabled = try await operatorAccounts(["enable", "disabled@example.com"], on: fixture.database)
                    #expect(enabled.status == 0)
                    #expect(enabled.output == "enabled account \(student.key) (disabled@example.com): it can log in again\n")
                    let back = try await second.logIn(student)
                    _ = try await first.postPin(as: back)
                    #expect(try await first.send(.delete, "/v1/StudentLocation/none", headers: [student.bearer]).status == .unauthorized)
                    let twice = try await operatorAccounts(["enable", "disabled@example.com"], on: fixture.database)
                    #expect(twice.status == 1)
                    #expect(twice.output == "auth-gateway: account \(student.key) (disabled@example.com) is not disabled\n")
                    let nobody = try await operatorAccounts(["disable", "nobody@example.com", "--operator", "ops"], on: fixture.database)
                    #expect(nobody.output == "auth-gateway: no account has the address nobody@example.com\n")
                }
            }
        }
    }
}
