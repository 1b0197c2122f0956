import Foundation
import JWTKit
import OnTheMapShared

/// The claims of an OpenID Connect ID token that the gateway reads (OpenID Connect Core §2, §5.1).
struct IDTokenClaims: JWTIdentityToken {
    enum CodingKeys: String, CodingKey {
        case issuer = "iss"
        case subject = "sub"
        case audience = "aud"
        case expires = "exp"
        case nonce
        case email
        case givenName = "given_name"
        case familyName = "family_name"
        case name
    }

    var issuer: IssuerClaim
    var subject: SubjectClaim
    var audience: AudienceClaim
    var expires: ExpirationClaim
    var nonce: String?
    var email: String?
    var givenName: String?
    var familyName: String?
    var name: String?
    /// Read by `IDTokenVerifier` from the claim the operator names (`OIDC_GROUPS_CLAIM`), not decoded here.
    var groups: [String] = []

    init(
        issuer: IssuerClaim, subject: SubjectClaim, audience: AudienceClaim, expires: ExpirationClaim, nonce: String?, email: String? = nil,
        givenName: String? = nil, familyName: String? = nil, name: String? = nil
    ) {
        self.issuer = issuer
        self.subject = subject
        self.audience = audience
        self.expires = expires
        self.nonce = nonce
        self.email = email
        self.givenName = givenName
        self.familyName = familyName
        self.name = name
    }

    /// The claims are checked by `IDTokenVerifier`, which knows the issuer, the nonce and the time.
    func verify(using _: some JWTAlgorithm) throws {}

    /// The person's first and last names: `given_name` and `family_name`, or `name` split at its last space.
    var names: (first: String, last: String) {
        if givenName != nil || familyName != nil { return (givenName ?? "", familyName ?? "") }
        guard let name, let space = name.lastIndex(of: " ") else { return (name ?? "", "") }
        return (String(name[..<space]), String(name[name.index(after: space)...]))
    }
}

/// Checks an ID token the issuer's token endpoint gave for one sign-in: signed by one of the issuer's keys
/// with an algorithm it announced (never `none`, never a shared-secret one), issued by it, for this client,
/// not expired, and carrying the sign-in's nonce; the groups it names (`OIDCGroups`) read from it.
struct IDTokenVerifier: Sendable {
    let issuer: String
    let clientID: String
    /// The issuer's `id_token_signing_alg_values_supported`, less what a public key cannot check.
    let algorithms: Set<String>
    /// The claim that names the person's groups (`OIDC_GROUPS_CLAIM`).
    var groupsClaim = OIDCSettings.defaultGroupsClaim
    /// How far the issuer's clock may be ahead of ours.
    var leeway: TimeInterval = 60

    /// Signature algorithms with a public key: a JWKS key is never used as a shared secret.
    static let publicKeyAlgorithms: Set<String> = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"]

    enum Refusal: Error, Equatable, CustomStringConvertible {
        case malformed
        case algorithmNotAllowed(String)
        case unknownKey
        case badSignature
        case wrongIssuer
        case wrongAudience
        case expired
        case wrongNonce
        case noSubject
        /// The token verifies, but its groups cannot be kept as they are.
        case groups(OIDCGroups.Refusal)

        var description: String {
            switch self {
            case .malformed: "its ID token is not a signed JWT"
            case .algorithmNotAllowed(let algorithm): "its ID token is signed with \(algorithm), which is not allowed"
            case .unknownKey: "its ID token is signed with a key the issuer does not publish"
            case .badSignature: "its ID token's signature does not verify"
            case .wrongIssuer: "its ID token was issued by someone else"
            case .wrongAudience: "its ID token was issued to another client"
            case .expired: "its ID token has expired"
            case .wrongNonce: "its ID token belongs to another sign-in"
            case .noSubject: "its ID token names nobody"
            case .groups(let refusal): refusal.description
            }
        }
    }

    /// What a token's header names: its algorithm and the key it was signed with.
    struct Header: Decodable, Equatable {
        var alg: String
        var kid: String?
    }

    static func header(of token: String) throws(Refusal) -> Header {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let bytes = Base64URL.decode(String(parts[0])), let header = try? JSONDecoder().decode(Header.self, from: Data(bytes))
        else { throw .malformed }
        return header
    }

    /// The token's claims, once every check passed. `keys` holds the issuer's published keys.
    func claims(of token: String, keys: OIDCKeySet, nonce: String, now: Date) async throws(Refusal) -> IDTokenClaims {
        let header = try Self.header(of: token)
        guard algorithms.contains(header.alg), Self.publicKeyAlgorithms.contains(header.alg) else { throw .algorithmNotAllowed(header.alg) }
        // A token naming no key is checked with the only one published, if there is only one.
        guard header.kid.map(keys.identifiers.contains) ?? (keys.identifiers.count == 1) else { throw .unknownKey }
        var claims: IDTokenClaims
        do {
            claims = try await keys.collection.verify(token, as: IDTokenClaims.self, expectedAudience: clientID)
        } catch let error as JWTError where error.errorType == .claimVerificationFailure {
            throw .wrongAudience
        } catch {
            throw .badSignature
        }
        guard claims.issuer.value == issuer else { throw .wrongIssuer }
        guard claims.expires.value.addingTimeInterval(leeway) > now else { throw .expired }
        guard let carried = claims.nonce, carried == nonce else { throw .wrongNonce }
        guard !claims.subject.value.isEmpty else { throw .noSubject }
        do {
            claims.groups = try OIDCGroups.read(groupsClaim, fromPayloadOf: token)
        } catch {
            throw .groups(error)
        }
        return claims
    }
}

/// An issuer's published signing keys (its JWKS), as the key identifiers and the collection that verifies.
struct OIDCKeySet: Sendable {
    let identifiers: Set<String>
    let collection: JWTKeyCollection

    /// Keys for encryption (`"use":"enc"`), and keys of kinds the library cannot use (a shared secret among
    /// them), are left out; a set with none left is no set.
    static func from(jwks json: Data) async -> OIDCKeySet? {
        guard let document = try? JSONSerialization.jsonObject(with: json) as? [String: Any], let keys = document["keys"] as? [Any]
        else { return nil }
        let collection = JWTKeyCollection()
        var identifiers: Set<String> = []
        for case let fields as [String: Any] in keys where (fields["use"] as? String ?? "sig") == "sig" {
            guard let id = fields["kid"] as? String, let data = try? JSONSerialization.data(withJSONObject: fields),
                let key = try? JSONDecoder().decode(JWK.self, from: data), (try? await collection.add(jwk: key)) != nil
            else { continue }
            identifiers.insert(id)
        }
        return identifiers.isEmpty ? nil : OIDCKeySet(identifiers: identifiers, collection: collection)
    }
}
