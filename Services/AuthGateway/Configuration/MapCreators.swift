import ServiceKit

/// Who may create class maps (`MAP_CREATORS`): a comma-separated list of account keys and email addresses
/// (compared without case), `provider:NAME` for every account of one identity provider (`provider:oidc` for
/// the students who sign in with the OpenID Connect provider), and `group:NAME` for the accounts whose
/// OpenID Connect groups include NAME (compared exactly, as the provider spells it). Unset, every signed-in
/// account may.
struct MapCreators: Sendable, Hashable {
    var keys: Set<String> = []
    var emails: Set<String> = []
    var providers: Set<String> = []
    var groups: Set<String> = []

    init(setting text: String) throws(ConfigurationError) {
        for item in text.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where !item.isEmpty {
            if item.hasPrefix("provider:") {
                providers.insert(String(item.dropFirst("provider:".count)))
            } else if item.hasPrefix("group:") {
                let group = String(item.dropFirst("group:".count))
                // A longer name could never be among an account's groups: the sign-in refuses it.
                guard !group.isEmpty, group.unicodeScalars.count <= OIDCGroups.maximumLength else {
                    throw ConfigurationError(
                        "MAP_CREATORS: group:NAME needs a group name of 1 to \(OIDCGroups.maximumLength) characters; got \"\(item)\"")
                }
                groups.insert(group)
            } else if item.contains("@") {
                emails.insert(item.lowercased())
            } else {
                keys.insert(item)
            }
        }
        guard !keys.isEmpty || !emails.isEmpty || !providers.isEmpty || !groups.isEmpty else {
            throw ConfigurationError(
                "MAP_CREATORS must name at least one account key, email, provider:NAME or group:NAME; unset it to let everyone")
        }
    }

    func admits(_ account: Account) -> Bool {
        keys.contains(account.key) || emails.contains(account.email.lowercased()) || providers.contains(account.provider)
            || !groups.isDisjoint(with: account.groups)
    }
}
