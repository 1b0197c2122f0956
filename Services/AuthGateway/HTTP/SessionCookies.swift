import HTTPTypes
import Hummingbird
import OnTheMapShared
import PreparedHTTP

/// Where a request's session comes from (the HttpOnly cookie set at login, or `Authorization: Bearer`),
/// and the cookies a login sets: host-only, or scoped to `domain` so that every name under it gets them.
struct SessionCookies: Sendable {
    /// `SESSION_COOKIE_DOMAIN`; nil keeps the cookies to the name they were set on.
    var domain: CookieDomain?

    static let session = SessionCredentials.cookieName
    static let xsrf = "XSRF-TOKEN"

    static func token(in headers: HTTPFields) -> SessionToken? {
        token(authorization: headers[.authorization], cookie: headers[.cookie])
    }

    /// The same, of a request before the router, read without making fields of its headers.
    static func token(in request: PreparedRequest) -> SessionToken? {
        token(authorization: request.header(.authorization), cookie: request.header(.cookie))
    }

    /// `cookie`: every `Cookie` line, joined by `; `.
    private static func token(authorization: String?, cookie: String?) -> SessionToken? {
        SessionCredentials.sessionID(authorization: authorization, cookie: Cookies(from: cookie.map { [$0] } ?? [])[session]?.value)
            .map(SessionToken.init)
    }

    /// `XSRF-TOKEN` readable by scripts (some clients force-unwrap it), and the session itself HttpOnly.
    /// `secure`: the client's connection is HTTPS, so the browser must never send them over plain HTTP (a
    /// network attacker could otherwise lure it to `http://` and read the session there).
    func set(on headers: inout HTTPFields, token: SessionToken, xsrf: String, maxAge: Int, secure: Bool) {
        // Cookies kept to one name from before the domain was set would be sent beside the new ones: they go.
        if domain != nil { Self.hostOnly.clear(on: &headers, secure: secure) }
        headers[values: .setCookie].append(cookie(Self.xsrf, xsrf, maxAge: maxAge, httpOnly: false, secure: secure))
        headers[values: .setCookie].append(cookie(Self.session, token.rawValue, maxAge: maxAge, httpOnly: true, secure: secure))
    }

    func clear(on headers: inout HTTPFields, secure: Bool) {
        if domain != nil { Self.hostOnly.clear(on: &headers, secure: secure) }
        headers[values: .setCookie].append(cookie(Self.xsrf, "", maxAge: 0, httpOnly: false, secure: secure))
        headers[values: .setCookie].append(cookie(Self.session, "", maxAge: 0, httpOnly: true, secure: secure))
    }

    /// The cookies as they are without `SESSION_COOKIE_DOMAIN`, kept to the name that set them.
    static let hostOnly = SessionCookies(domain: nil)

    /// A cookie of the gateway's (`SameSite=Lax`), under `domain` when there is one.
    func cookie(_ name: String, _ value: String, maxAge: Int, path: String = "/", httpOnly: Bool, secure: Bool) -> String {
        Cookie(name: name, value: value, maxAge: maxAge, domain: domain?.name, path: path, secure: secure, httpOnly: httpOnly, sameSite: .lax)
            .description
    }
}

/// Browser writes from another site's pages are refused: a request that names an `Origin` other than the
/// host it was sent to, or that the browser marks `Sec-Fetch-Site: cross-site`. Apps send neither. Under
/// `SESSION_COOKIE_DOMAIN` (`siteDomain`) the names below it are one site: a page on one may write to another.
enum OriginCheck {
    /// A request answered before the router: its `Host` is among its headers (`PreparedRequest.header`).
    static func isCrossSite(_ request: PreparedRequest, siteDomain: CookieDomain?) -> Bool {
        isCrossSite(site: request.header(secFetchSite), origin: request.header(.origin), host: request.header(.host), siteDomain: siteDomain)
    }

    /// `host` is the authority the request was sent to (its `Host` header).
    static func isCrossSite(site: String?, origin: String?, host: String?, siteDomain: CookieDomain?) -> Bool {
        if site?.lowercased() == "cross-site" { return true }
        guard let origin else { return false }
        if origin == "null" { return true }
        let originHost = origin.split(separator: "/", omittingEmptySubsequences: true).dropFirst().first
        if originHost?.lowercased() == host?.lowercased() { return false }
        guard let siteDomain, let originHost, let host else { return true }
        return !(siteDomain.contains(host: originHost) && siteDomain.contains(host: Substring(host)))
    }

    /// The same, for a request the router answers (its authority is the `Host` it was sent to).
    static func isCrossSite(_ request: Request, siteDomain: CookieDomain?) -> Bool {
        isCrossSite(
            site: request.headers[secFetchSite], origin: request.headers[.origin],
            host: request.head.authority, siteDomain: siteDomain)
    }

    static func hasBrowserOrigin(_ request: Request) -> Bool {
        request.headers[.origin] != nil || request.headers[secFetchSite] != nil
    }

    /// A browser page's request must show it read the XSRF cookie (`X-XSRF-TOKEN` equal to it); apps send a
    /// wrong one or none, and are not browser pages.
    static func requireXSRF(_ request: Request) throws(GatewayError) {
        guard hasBrowserOrigin(request) else { return }
        guard let cookie = request.cookies[SessionCookies.xsrf]?.value, !cookie.isEmpty,
            request.headers[HTTPField.Name("X-XSRF-TOKEN")!] == cookie
        else { throw .xsrfMismatch }
    }

    private static let secFetchSite = HTTPField.Name("Sec-Fetch-Site")!
}
