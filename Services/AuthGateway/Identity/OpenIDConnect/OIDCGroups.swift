import Foundation
import OnTheMapShared

/// The groups an ID token says its person belongs to, from the claim `OIDC_GROUPS_CLAIM` names: a list of
/// names (as Keycloak, Entra ID and Okta send them) or one name; no claim, or `null`, is no group. They are
/// kept whole or the sign-in is refused: a claim of another shape, more than `maximumCount` groups or a name
/// longer than `maximumLength` is never cut down, so who may create maps (`MAP_CREATORS`'s `group:NAME`) is
/// never decided on part of what the provider said.
enum OIDCGroups {
    static let maximumCount = 100
    /// In Unicode scalars, as PostgreSQL counts a text's characters.
    static let maximumLength = 200

    enum Refusal: Error, Equatable, CustomStringConvertible {
        /// The claim is neither a name nor a list of names (or a name holds a NUL, which no text column takes).
        case unreadable(claim: String)
        case tooMany(claim: String, count: Int)
        case tooLong(claim: String)

        var description: String {
            switch self {
            case .unreadable(let claim): "its ID token's \(claim) claim is neither a group's name nor a list of them"
            case .tooMany(let claim, let count):
                "its ID token's \(claim) claim names \(count) groups, more than the \(OIDCGroups.maximumCount) this server keeps"
            case .tooLong(let claim):
                "its ID token's \(claim) claim names a group longer than the \(OIDCGroups.maximumLength) characters this server keeps"
            }
        }
    }

    /// The groups `claim` names in a token whose signature was checked already: sorted, each once, empty
    /// names left out.
    static func read(_ claim: String, fromPayloadOf token: String) throws(Refusal) -> [String] {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let bytes = Base64URL.decode(String(parts[1])),
            let payload = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any]
        else { throw .unreadable(claim: claim) }
        let names: [String]
        switch payload[claim] {
        case nil, is NSNull: return []
        case let name as String: names = [name]
        case let list as [Any]:
            names = list.compactMap { $0 as? String }
            guard names.count == list.count else { throw .unreadable(claim: claim) }
        default: throw .unreadable(claim: claim)
        }
        let groups = Set(names.filter { !$0.isEmpty }).sorted()
        guard !groups.contains(where: { $0.unicodeScalars.contains("\u{0}") }) else { throw .unreadable(claim: claim) }
        guard groups.count <= maximumCount else { throw .tooMany(claim: claim, count: groups.count) }
        guard groups.allSatisfy({ $0.unicodeScalars.count <= maximumLength }) else { throw .tooLong(claim: claim) }
        return groups
    }
}
