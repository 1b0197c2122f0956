import Foundation
import JWTKit
import OnTheMapShared
import Testing

@testable import AuthGateway

/// What an ID token must be before a sign-in trusts it: each forgery or slip refused with its reason. The
/// tokens are signed here with keys of the test's own, the issuer's published keys standing beside them.
@Suite struct IDTokenVerifierTests {
    static let issuer = "https://id.school.example"
    static let verifier = IDTokenVerifier(issuer: issuer, clientID: "on-the-map", algorithms: ["RS256", "ES256"])
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    /// The issuer's signing key, and the set of its public half a sign-in checks tokens with.
    struct Issuer {
        let signing = JWTKeyCollection()
        let published: OIDCKeySet

        init(kid: String = "key-1") async {
            let key = ES256PrivateKey()
            await signing.add(ecdsa: key, kid: JWKIdentifier(string: kid))
            let collection = JWTKeyCollection()
            await collection.add(ecdsa: key.publicKey, kid: JWKIdentifier(string: kid))
            published = OIDCKeySet(identifiers: [kid], collection: collection)
        }

        func token(_ change: (inout IDTokenClaims) -> Void = { _ in }, kid: String = "key-1") async throws -> String {
            var claims = IDTokenClaims(
                issuer: .init(value: IDTokenVerifierTests.issuer), subject: .init(value: "student-42"), audience: .init(value: ["on-the-map"]),
                expires: .init(value: IDTokenVerifierTests.now.addingTimeInterval(600)), nonce: "nonce-1", email: "ada@school.example",
                givenName: "Ada", familyName: "Lovelace", name: nil)
            change(&claims)
            return try await signing.sign(claims, kid: JWKIdentifier(string: kid))
        }

        /// A token with one more claim, `name`, as a provider would send its groups.
        func token(claim name: String, _ value: some Encodable & Sendable) async throws -> String {
            let claims = IDTokenClaims(
                issuer: .init(value: IDTokenVerifierTests.issuer), subject: .init(value: "student-42"), audience: .init(value: ["on-the-map"]),
                expires: .init(value: IDTokenVerifierTests.now.addingTimeInterval(600)), nonce: "nonce-1")
            return try await signing.sign(WithClaim(claims: claims, name: name, value: value), kid: "key-1")
        }
    }

    /// The standard claims and one more under any name; only ever signed here.
    struct WithClaim<Value: Encodable & Sendable>: JWTPayload {
        struct Name: CodingKey {
            var stringValue: String
            var intValue: Int? { nil }
            init(stringValue: String) { self.stringValue = stringValue }
            init?(intValue _: Int) { nil }
        }

        var claims: IDTokenClaims
        var name: String
        var value: Value

        init(claims: IDTokenClaims, name: String, value: Value) {
            self.claims = claims
            self.name = name
            self.value = value
        }

        init(from decoder: any Decoder) throws {
            throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "only signed here"))
        }

        func encode(to encoder: any Encoder) throws {
            try claims.encode(to: encoder)
            var container = encoder.container(keyedBy: Name.self)
            try container.encode(value, forKey: Name(stringValue: name))
        }

        func verify(using _: some JWTAlgorithm) throws {}
    }

    /// A JSON array of names and numbers, as no groups claim should be.
    enum NameOrNumber: Encodable, Sendable {
        case name(String)
        case number(Int)

        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            switch self {
            case .name(let name): try container.encode(name)
            case .number(let number): try container.encode(number)
            }
        }
    }

    /// The groups a verifier reading `claim` finds in the token.
    func groups(_ token: String, from issuer: Issuer, claim: String = "groups") async throws -> [String] {
        var verifier = Self.verifier
        verifier.groupsClaim = claim
        return try await verifier.claims(of: token, keys: issuer.published, nonce: "nonce-1", now: Self.now).groups
    }

    func refusal(_ token: String, keys: OIDCKeySet, nonce: String = "nonce-1") async -> IDTokenVerifier.Refusal? {
        do {
            _ = try await Self.verifier.claims(of: token, keys: keys, nonce: nonce, now: Self.now)
            return nil
        } catch {
            return error
        }
    }

    @Test func aTokenFromTheIssuerForThisSignInIsTrusted() async throws {
        let issuer = await Issuer()
        let claims = try await Self.verifier.claims(of: try await issuer.token(), keys: issuer.published, nonce: "nonce-1", now: Self.now)
        #expect(claims.subject.value == "student-42")
        #expect(claims.names == ("Ada", "Lovelace"))
        #expect(claims.email == "ada@school.example")
    }

    @Test func eachSlipIsRefusedWithItsReason() async throws {
        let issuer = await Issuer()
        let keys = issuer.published
        #expect(await refusal(try await issuer.token { $0.expires = .init(value: Self.now.addingTimeInterval(-120)) }, keys: keys) == .expired)
        #expect(await refusal(try await issuer.token { $0.audience = .init(value: ["another-app"]) }, keys: keys) == .wrongAudience)
        #expect(await refusal(try await issuer.token { $0.issuer = .init(value: "https://evil.example") }, keys: keys) == .wrongIssuer)
        #expect(await refusal(try await issuer.token(), keys: keys, nonce: "another-sign-in") == .wrongNonce)
        #expect(await refusal(try await issuer.token { $0.nonce = nil }, keys: keys) == .wrongNonce)
        #expect(await refusal(try await issuer.token { $0.subject = .init(value: "") }, keys: keys) == .noSubject)
        // A clock a little behind the issuer's is allowed for.
        #expect(await refusal(try await issuer.token { $0.expires = .init(value: Self.now.addingTimeInterval(-30)) }, keys: keys) == nil)
    }

    @Test func forgeriesAreRefused() async throws {
        let issuer = await Issuer()
        let forger = await Issuer()
        // Signed by someone else under the issuer's key id.
        #expect(await refusal(try await forger.token(), keys: issuer.published) == .badSignature)
        // Signed by a key the issuer does not publish.
        #expect(await refusal(try await forger.token(kid: "key-2"), keys: issuer.published) == .unknownKey)
        // The claims changed after signing.
        let parts = try await issuer.token().split(separator: ".")
        let payload = Base64URL.encode(Array(#"{"iss":"\#(Self.issuer)","sub":"admin","aud":"on-the-map","exp":1900000000,"nonce":"nonce-1"}"#.utf8))
        #expect(await refusal("\(parts[0]).\(payload).\(parts[2])", keys: issuer.published) == .badSignature)
        // No signature at all, or one made with the public key as a shared secret.
        let none = Base64URL.encode(Array(#"{"alg":"none","kid":"key-1"}"#.utf8)) + "." + payload + "."
        #expect(await refusal(none, keys: issuer.published) == .algorithmNotAllowed("none"))
        let shared = JWTKeyCollection()
        await shared.add(hmac: HMACKey(from: "the issuer's public key, used as a shared secret"), digestAlgorithm: .sha256, kid: "key-1")
        let claims = IDTokenClaims(
            issuer: .init(value: Self.issuer), subject: .init(value: "admin"), audience: .init(value: ["on-the-map"]),
            expires: .init(value: Self.now.addingTimeInterval(600)), nonce: "nonce-1")
        #expect(await refusal(try await shared.sign(claims, kid: "key-1"), keys: issuer.published) == .algorithmNotAllowed("HS256"))
        #expect(await refusal("not a token", keys: issuer.published) == .malformed)
    }

    @Test func theGroupsAreAListOrOneNameUnderTheClaimTheOperatorNames() async throws {
        let issuer = await Issuer()
        let list = try await issuer.token(claim: "groups", ["year-9", "teachers", "teachers", ""])
        #expect(try await groups(list, from: issuer) == ["teachers", "year-9"], "sorted, each once, no empty name")
        #expect(try await groups(try await issuer.token(claim: "groups", "teachers"), from: issuer) == ["teachers"])
        let one = try await issuer.token(claim: "groups", "teachers, staff")
        #expect(try await groups(one, from: issuer) == ["teachers, staff"], "a string is one group")
        let roles = try await issuer.token(claim: "https://school.example/roles", ["teachers"])
        #expect(try await groups(roles, from: issuer, claim: "https://school.example/roles") == ["teachers"])
        #expect(try await groups(roles, from: issuer).isEmpty, "another claim is not the groups")
        #expect(try await groups(try await issuer.token(), from: issuer).isEmpty)
        #expect(try await groups(try await issuer.token(claim: "groups", String?.none), from: issuer).isEmpty)
    }

    /// Groups are kept whole or the sign-in is refused: never decided on part of what the provider said.
    @Test func groupsBeyondWhatIsKeptOrOfAnotherShapeRefuseTheToken() async throws {
        let issuer = await Issuer()
        let keys = issuer.published
        let hundred = (1...OIDCGroups.maximumCount).map { "group-\($0)" }
        #expect(try await groups(try await issuer.token(claim: "groups", hundred), from: issuer).count == OIDCGroups.maximumCount)
        #expect(
            await refusal(try await issuer.token(claim: "groups", hundred + ["one-more"]), keys: keys)
                == .groups(.tooMany(claim: "groups", count: OIDCGroups.maximumCount + 1)))
        let longest = String(repeating: "\u{E9}", count: OIDCGroups.maximumLength)
        #expect(try await groups(try await issuer.token(claim: "groups", [longest]), from: issuer) == [longest])
        #expect(await refusal(try await issuer.token(claim: "groups", [longest + "x"]), keys: keys) == .groups(.tooLong(claim: "groups")))
        for token in [
            try await issuer.token(claim: "groups", 7),
            try await issuer.token(claim: "groups", [NameOrNumber.name("teachers"), .number(7)]),
            try await issuer.token(claim: "groups", ["name": "teachers"]),
            try await issuer.token(claim: "groups", ["teach\u{0}ers"]),
        ] {
            #expect(await refusal(token, keys: keys) == .groups(.unreadable(claim: "groups")))
        }
        let many = IDTokenVerifier.Refusal.groups(.tooMany(claim: "groups", count: 101)).description
        #expect(many == "its ID token's groups claim names 101 groups, more than the 100 this server keeps")
    }

    @Test func onlyTheIssuersSigningKeysArePublished() async throws {
        let key = ES256PrivateKey()
        let parameters = try #require(key.parameters)
        let jwks = """
            {"keys":[
              {"kty":"EC","crv":"P-256","kid":"signing","use":"sig","x":"\(parameters.x)","y":"\(parameters.y)"},
              {"kty":"EC","crv":"P-256","kid":"encryption","use":"enc","x":"\(parameters.x)","y":"\(parameters.y)"},
              {"kty":"oct","kid":"shared","k":"c2VjcmV0"},
              {"kty":"RSA","kid":"broken","n":"not base64!","e":"AQAB"}
            ]}
            """
        let set = try #require(await OIDCKeySet.from(jwks: Data(jwks.utf8)))
        #expect(set.identifiers == ["signing"])
        #expect(await OIDCKeySet.from(jwks: Data(#"{"keys":[]}"#.utf8)) == nil)
        #expect(await OIDCKeySet.from(jwks: Data("<html>".utf8)) == nil)
    }
}
