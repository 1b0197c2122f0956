import ServiceKit

/// `SESSION_COOKIE_DOMAIN`: the parent domain of the names one gateway answers to (`map.example.edu` for
/// `udacity.map.example.edu` and `parse.map.example.edu`). The session cookies are scoped to it, so an app
/// that logs in on one name writes on the other, and a page on one of the names is not another site's.
struct CookieDomain: Sendable, Hashable {
    /// Lowercased, without a leading or trailing dot.
    let name: String

    /// A bare domain name of two labels or more: letters, digits and inner hyphens, at most 63 bytes a label.
    /// Not an IP address (a browser keeps a cookie scoped to one to that address alone), and nothing a URL
    /// adds to a name (a scheme, a port, a path), nor a leading dot, which RFC 6265 ignores.
    init(setting text: String) throws(ConfigurationError) {
        let name = text.lowercased()
        let labels = name.split(separator: ".", omittingEmptySubsequences: false)
        let isLabel = { (label: Substring) in
            (1...63).contains(label.utf8.count) && label.first != "-" && label.last != "-"
                && label.allSatisfy { ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "-" }
        }
        guard name.utf8.count <= 253, labels.count >= 2, labels.allSatisfy(isLabel), labels.last?.allSatisfy(\.isNumber) == false else {
            throw ConfigurationError(
                "SESSION_COOKIE_DOMAIN must be a bare domain name such as map.example.edu (no scheme, port, path or leading dot); got \"\(text)\"")
        }
        self.name = name
    }

    /// RFC 6265 §5.1.3: the host (an authority's, port and all) is this domain or a name under it.
    func contains(host authority: Substring) -> Bool {
        let host = Self.hostName(authority).lowercased()
        return host == name || host.hasSuffix("." + name)
    }

    /// The name in a `Host` header or an origin's authority, without its port; an IPv6 literal whole.
    private static func hostName(_ authority: Substring) -> Substring {
        if authority.hasPrefix("[") { return authority.prefix { $0 != "]" } }
        return authority.prefix { $0 != ":" }
    }
}
