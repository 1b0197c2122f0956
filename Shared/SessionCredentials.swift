/// Where a gateway request's session id comes from: `Authorization: Bearer <session id>`, else the
/// HttpOnly session cookie set at login. Free of HTTP framework types so the parsing can be fuzzed alone.
public enum SessionCredentials {
    /// The name of the HttpOnly cookie that carries the session id.
    public static let cookieName = "onthemap_session"

    /// The session id a request presents: a bearer token wins over the cookie; an empty cookie is none.
    public static func sessionID(authorization: String?, cookie: String?) -> String? {
        if let authorization, let value = bearer(authorization) { return value }
        if let cookie, !cookie.isEmpty { return cookie }
        return nil
    }

    /// What follows `Bearer ` (the scheme in any case), without surrounding spaces and tabs; nil when the
    /// header names another scheme or carries nothing.
    public static func bearer(_ header: String) -> String? {
        let scheme = "bearer ".utf8
        let bytes = header.utf8
        // ASCII letters compare case-insensitively with the 0x20 bit set; the space stays a space.
        guard bytes.count > scheme.count, zip(bytes, scheme).allSatisfy({ $0 | 0x20 == $1 }) else { return nil }
        let isBlank = { (byte: UInt8) in byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        guard let first = bytes.dropFirst(scheme.count).firstIndex(where: { !isBlank($0) }),
            let last = bytes.lastIndex(where: { !isBlank($0) })
        else { return nil }
        return String(Substring(bytes[first...last]))
    }
}
