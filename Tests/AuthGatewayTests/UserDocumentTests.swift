import Foundation
import HTTPTypes
import HummingbirdTesting
import Testing

@testable import AuthGateway
@testable import ServiceTwins

/// `GET /v1/users/{key}` as the strictest public apps decode it: every field the contract lists, of its type,
/// none optional, at the top level and again under `"user"`.
@Suite struct UserDocumentTests {
    /// A user as such an app declares it: a missing key, a `null` or a value of another type fails the decoding.
    struct StrictUser: Decodable {
        struct Email: Decodable {
            let address: String
            let verified: Bool
            let verificationCodeSent: Bool

            enum CodingKeys: String, CodingKey {
                case address
                case verified = "_verified"
                case verificationCodeSent = "_verification_code_sent"
            }
        }

        /// Any JSON object (not `null`, not another type), whatever it holds.
        struct SomeObject: Decodable {
            struct Name: CodingKey {
                var stringValue: String
                var intValue: Int? { nil }
                init(stringValue: String) { self.stringValue = stringValue }
                init?(intValue: Int) { nil }
            }

            init(from decoder: any Decoder) throws {
                _ = try decoder.container(keyedBy: Name.self)
            }
        }

        /// An array's item, whatever it is.
        struct Item: Decodable {
            init(from decoder: any Decoder) throws {}
        }

        let firstName: String
        let lastName: String
        let key: String
        let nickname: String
        let email: Email
        let registered: Bool
        let hasPassword: Bool
        let employerSharing: Bool
        let socialAccounts: [Item]
        let cohortKeys: [Item]
        let badges: [Item]
        let principals: [Item]
        let enrollments: [Item]
        let externalAccounts: [Item]
        let tags: [Item]
        let affiliateProfiles: [Item]
        let memberships: [Item]
        let emailPreferences: SomeObject
        let imageURL: String

        enum CodingKeys: String, CodingKey {
            case firstName = "first_name"
            case lastName = "last_name"
            case key, nickname, email
            case registered = "_registered"
            case hasPassword = "_has_password"
            case employerSharing = "employer_sharing"
            case socialAccounts = "social_accounts"
            case cohortKeys = "_cohort_keys"
            case badges = "_badges"
            case principals = "_principals"
            case enrollments = "_enrollments"
            case externalAccounts = "external_accounts"
            case tags
            case affiliateProfiles = "_affiliate_profiles"
            case memberships = "_memberships"
            case emailPreferences = "email_preferences"
            case imageURL = "_image_url"
        }
    }

    /// The older apps' form: the same user under `"user"`.
    struct Wrapped: Decodable {
        let user: StrictUser
    }

    @Test func aStrictAppDecodesTheUserUnwrappedAndUnderUser() async throws {
        try await withGatewayRouter { client, _ in
            let student = try await client.signedUpAndLoggedIn("strict@example.com", firstName: "Grace", lastName: "Hopper")
            for path in ["/v1/users/\(student.key)", "/api/users/me", "/v1/users/\(student.token)"] {
                let reply = try await client.send(.get, path, headers: [student.bearer])
                #expect(reply.status == .ok, "\(path)")
                // Apps drop the first 5 bytes blindly.
                let body = Data(reply.body.utf8.dropFirst(5))
                let unwrapped = try JSONDecoder().decode(StrictUser.self, from: body)
                let wrapped = try JSONDecoder().decode(Wrapped.self, from: body).user
                for user in [unwrapped, wrapped] {
                    #expect(user.key == student.key, "\(path)")
                    #expect((user.firstName, user.lastName, user.nickname) == ("Grace", "Hopper", "Grace"), "\(path)")
                    #expect(user.email.address == "strict@example.com", "\(path)")
                    #expect(user.registered && user.hasPassword, "\(path)")
                    #expect(user.imageURL == "", "no account has a picture")
                }
            }
            // A stranger's app decodes it as well: the email is hidden, not missing.
            let stranger = try await client.send(.get, "/v1/users/\(student.key)")
            let seen = try JSONDecoder().decode(Wrapped.self, from: Data(stranger.body.utf8.dropFirst(5))).user
            #expect(seen.email.address == "")
        }
    }
}
