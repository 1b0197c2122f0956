import Foundation

/// An email address as someone typed it, and the one key that says which address it is. Sign-up stores the
/// key, login looks the account up by it and the login throttle counts failures under it, so no spelling
/// of an address ("Ada@Example.com", " ada@EXAMPLE.COM ") is a different account or gets a fresh allowance.
struct EmailAddress: Sendable, Hashable {
    /// Trimmed, otherwise as typed: what the account shows.
    let text: String
    /// Lowercased and in Unicode's composed form (NFC), so letters typed with or without combining
    /// accents are one address.
    let key: String

    /// RFC 5321's limits: a whole path of 254 bytes, a local part of 64, a domain label of 63.
    static let maximumBytes = 254
    static let maximumLocalPartBytes = 64
    static let maximumLabelBytes = 63

    /// Any text, normalised but not validated: a login needs only the key, and a typo finds no account.
    init(_ typed: String) {
        text = typed.trimmingCharacters(in: .whitespacesAndNewlines)
        key = text.lowercased().precomposedStringWithCanonicalMapping
    }

    /// Why no mail could reach this address, in words that name the field; nil when it could.
    var problem: String? {
        guard !text.isEmpty else { return "email is required." }
        guard text.utf8.count <= Self.maximumBytes else { return "email must be at most \(Self.maximumBytes) bytes." }
        guard !text.unicodeScalars.contains(where: { $0.properties.isWhitespace || $0.properties.generalCategory == .control }) else {
            return "email must not contain spaces or control characters."
        }
        let parts = text.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, Self.isLocalPart(parts[0]), Self.isDomain(parts[1]) else {
            return "email must be an address such as student@example.com."
        }
        guard parts[0].utf8.count <= Self.maximumLocalPartBytes else {
            return "email must have at most \(Self.maximumLocalPartBytes) bytes before the @."
        }
        return nil
    }

    /// Dot-separated words: no leading, trailing or doubled dot.
    private static func isLocalPart(_ local: Substring) -> Bool {
        !local.isEmpty && local.split(separator: ".", omittingEmptySubsequences: false).allSatisfy { !$0.isEmpty }
    }

    /// At least two labels of letters, digits and inner hyphens.
    private static func isDomain(_ domain: Substring) -> Bool {
        let labels = domain.split(separator: ".", omittingEmptySubsequences: false)
        return labels.count >= 2
            && labels.allSatisfy { label in
                !label.isEmpty && label.utf8.count <= maximumLabelBytes && label.first != "-" && label.last != "-"
                    && label.unicodeScalars.allSatisfy { $0 == "-" || $0.properties.isAlphabetic || $0.properties.numericType == .decimal }
            }
    }
}
