/// Cookies kept as a browser or an app's URLSession keeps them (RFC 6265 §5.3, as far as the gateway's cookies
/// go): one with `Domain` is sent to that domain and every name under it, one without only back to the host
/// that set it; a `Max-Age` of 0 or less removes the cookie it names.
struct CookieJar {
    private struct Stored {
        var name: String
        var value: String
        /// The host that set it when `hostOnly`, else the `Domain` attribute without a leading dot.
        var domain: String
        var hostOnly: Bool
    }

    private var stored: [Stored] = []

    /// Keeps what one `Set-Cookie` line says, as received from `host`; a `Domain` the host is not under is refused.
    mutating func receive(_ line: String, from host: String) {
        let parts = line.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
        let pair = parts[0].split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
        guard pair.count == 2, !pair[0].isEmpty else { return }
        var attributes: [String: String] = [:]
        for attribute in parts.dropFirst() {
            let field = attribute.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            attributes[field[0].lowercased()] = field.count == 2 ? String(field[1]) : ""
        }
        var cookie = Stored(name: String(pair[0]), value: String(pair[1]), domain: host.lowercased(), hostOnly: true)
        if let domain = attributes["domain"], !domain.isEmpty {
            let bare = domain.hasPrefix(".") ? String(domain.dropFirst()).lowercased() : domain.lowercased()
            guard Self.domainMatches(host: host, domain: bare) else { return }
            cookie.domain = bare
            cookie.hostOnly = false
        }
        stored.removeAll { $0.name == cookie.name && $0.domain == cookie.domain && $0.hostOnly == cookie.hostOnly }
        if let maxAge = attributes["max-age"].flatMap({ Int($0) }), maxAge <= 0 { return }
        stored.append(cookie)
    }

    /// The `Cookie` header a request to `host` carries; nil when no cookie goes there.
    func header(for host: String) -> String? {
        let sent = stored.filter { $0.hostOnly ? $0.domain == host.lowercased() : Self.domainMatches(host: host, domain: $0.domain) }
        return sent.isEmpty ? nil : sent.map { "\($0.name)=\($0.value)" }.joined(separator: "; ")
    }

    /// RFC 6265 §5.1.3: the host is the domain, or a name under it.
    static func domainMatches(host: String, domain: String) -> Bool {
        let host = host.lowercased()
        return host == domain || host.hasSuffix("." + domain)
    }
}
