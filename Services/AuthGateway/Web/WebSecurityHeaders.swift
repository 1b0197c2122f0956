import HTTPTypes

/// The origin map tiles come from, as a Content-Security-Policy source: `TILE_URL`'s scheme, host and port,
/// with a `{s}` subdomain placeholder as `*`.
struct TileOrigin: Sendable, Equatable {
    let source: String

    init?(_ template: String) {
        let lowered = template.lowercased()
        guard let scheme = ["https://", "http://"].first(where: { lowered.hasPrefix($0) }) else { return nil }
        let rest = template.dropFirst(scheme.count)
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        let host = authority.replacingOccurrences(of: "{s}", with: "*")
        // What is left must be a plain host[:port]: nothing that could end the policy's source list.
        guard !host.isEmpty, !host.contains("@"),
            host.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-.:*[]".contains($0)) })
        else { return nil }
        source = scheme + host
    }
}

/// Headers on every web client file: scripts and styles only from the gateway itself, images also from the
/// tile server (none when there is no outside one), no framing, and only the origin in a `Referer` to other
/// sites (tile servers ask for one).
enum WebSecurityHeaders {
    static func contentSecurityPolicy(tiles: TileOrigin?) -> String {
        [
            "default-src 'self'", "script-src 'self'", "style-src 'self'", "img-src 'self' data:" + (tiles.map { " \($0.source)" } ?? ""),
            "connect-src 'self'", "object-src 'none'", "base-uri 'none'", "form-action 'self'", "frame-ancestors 'none'",
        ].joined(separator: "; ")
    }

    static func fields(tiles: TileOrigin?) -> HTTPFields {
        [
            HTTPField.Name.contentSecurityPolicy: contentSecurityPolicy(tiles: tiles),
            HTTPField.Name("Referrer-Policy")!: "strict-origin-when-cross-origin",
            HTTPField.Name("X-Frame-Options")!: "DENY",
            HTTPField.Name("Cross-Origin-Opener-Policy")!: "same-origin",
        ]
    }
}
