import HTTPTypes
import HummingbirdTesting
import OnTheMapShared
import TestSupport
import Testing

@testable import AuthGateway
@testable import ServiceTwins

/// The whole life of a student through the gateway.
@Suite struct StudentLifeTests {
    @Test(arguments: GatewayStoresKind.allCases)
    func signUpLogInProfilePostListOverwriteDeleteLogOut(_ stores: GatewayStoresKind) async throws {
        try await withGatewayRouter(over: stores) { client, _ in
            var student = try await client.signUp(Student("jarrod@example.com"))
            #expect(student.key.count == 10 && student.key.allSatisfy(\.isNumber))
            student = try await client.logIn(student)

            let profile = try await client.send(.get, "/v1/users/\(student.key)", headers: [student.bearer])
            #expect(profile.status == .ok)
            #expect(profile.json["first_name"] as? String == "Jarrod")
            #expect((profile.json["email"] as? [String: Any])?["address"] as? String == "jarrod@example.com")

            let id = try await client.postPin(as: student)
            let list = try await client.send(.get, "/v1/StudentLocation?limit=100&order=-updatedAt")
            let pins = list.json["results"] as? [[String: Any]] ?? []
            #expect(pins.count == 1)
            #expect(pins.first?["objectId"] as? String == id)
            #expect(pins.first?["uniqueKey"] as? String == student.key, "identity comes from the session, not the body")
            #expect(pins.first?["firstName"] as? String == "Jarrod")

            let overwrite = try await client.send(
                .put, "/v1/StudentLocation/\(id)",
                body: """
                    {"uniqueKey":"1234","firstName":"John","lastName":"Doe","mapString":"Berlin","mediaURL":"https://udacity.com","latitude":52.52,"longitude":13.405}
                    """, headers: [student.bearer])
            #expect(overwrite.status == .ok)
            #expect(overwrite.json["objectId"] as? String == id)
            let pin = try await client.send(.get, "/v1/StudentLocation/\(id)")
            #expect(pin.json["mapString"] as? String == "Berlin")

            let deleted = try await client.send(.delete, "/v1/StudentLocation/\(id)", headers: [student.bearer])
            #expect(deleted.status == .ok)
            #expect(deleted.body == "{}")

            let logout = try await client.send(.delete, "/v1/session", headers: [student.bearer])
            #expect(logout.status == .ok)
            #expect(logout.body.hasPrefix(")]}'\n{\"session\":{\"id\":\"\(student.token)\",\"expiration\":\""))

            let afterwards = try await client.send(
                .post, "/v1/StudentLocation", body: #"{"mapString":"x","mediaURL":"https://a.example","latitude":1,"longitude":1}"#,
                headers: [student.bearer])
            #expect(afterwards.status == .unauthorized)
            #expect(afterwards.body == #"{"code":209,"error":"Log in to post, change or delete a pin."}"#)
        }
    }

    @Test func logoutEndsTheSessionOnEveryGatewayReplica() async throws {
        // Two gateways on one database: the session opened on one is revoked through the other.
        try await withGateway { first, fixture in
            let student = try await first.signedUpAndLoggedIn("replica@example.com")
            try await withSecondReplica(of: fixture) { second in
                _ = try await second.postPin(as: student)
                #expect(try await first.send(.delete, "/v1/session", headers: [student.bearer]).status == .ok)
                // The second replica hears of the logout by NOTIFY, a moment after it is answered.
                let refused = try await waitFor(within: .seconds(2)) {
                    try await second.send(.delete, "/v1/StudentLocation/none", headers: [student.bearer]).status == .unauthorized
                }
                #expect(refused != nil, "the session still wrote on the other replica 2 s after logging out")
            }
        }
    }

    @Test(arguments: GatewayStoresKind.allCases)
    func signUpRefusesDuplicatesShortPasswordsAndBadEmails(_ stores: GatewayStoresKind) async throws {
        try await withGatewayRouter(over: stores) { client, _ in
            _ = try await client.signUp(Student("dup@example.com"))
            let duplicate = try await client.send(
                .post, "/v1/accounts", body: #"{"email":"DUP@example.com","password":"another-password","firstName":"A","lastName":"B"}"#)
            #expect(duplicate.status == .conflict)
            #expect(duplicate.body == #"{"status":409,"error":"An account with this email already exists."}"#)
            let short = try await client.send(
                .post, "/v1/accounts", body: #"{"email":"s@example.com","password":"1234567","firstName":"A","lastName":"B"}"#)
            #expect(short.status == .badRequest)
            #expect(short.json["parameter"] as? String == "password")
            // Characters are counted as the published document counts them, in code points: four CR LF pairs
            // are eight (two Swift Characters would be four).
            let crlf = try await client.send(
                .post, "/v1/accounts", body: #"{"email":"crlf@example.com","password":"\r\n\r\n\r\n\r\n","firstName":"A","lastName":"B"}"#)
            #expect(crlf.status == .created, "\(crlf.body)")
            let nul = try await client.send(
                .post, "/v1/accounts", body: #"{"email":"nul@example.com","password":"12345678\u0000tail","firstName":"A","lastName":"B"}"#)
            #expect(nul.status == .badRequest)
            #expect(nul.json["error"] as? String == "password must not contain a NUL character.")
            let email = try await client.send(
                .post, "/v1/accounts", body: #"{"email":"not-an-email","password":"12345678","firstName":"A","lastName":"B"}"#)
            #expect(email.json["parameter"] as? String == "email")
            let missing = try await client.send(.post, "/v1/accounts", body: #"{"email":"m@example.com","password":"12345678"}"#)
            #expect(missing.json["parameter"] as? String == "firstName")
        }
    }
}
