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
