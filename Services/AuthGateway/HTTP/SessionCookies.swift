import HTTPTypes
import Hummingbird
import NIOHTTP1
import OnTheMapShared

/// Where a request's session comes from (the HttpOnly cookie set at login, or `Authorization: Bearer`),
/// and the cookies a login sets.
enum SessionCookies {
    static let session = SessionCredentials.cookieName
    static let xsrf = "XSRF-TOKEN"

    static func token(in request: Request) -> SessionToken? {
        SessionCredentials.sessionID(authorization: request.headers[.authorization], cookie: request.cookies[session]?.value)
            .map(SessionToken.init)
    }

    /// The same, from the headers as NIO's parser hands them over.
    static func token(in headers: HTTPHeaders) -> SessionToken? {
        SessionCredentials.sessionID(
            authorization: headers.first(name: "Authorization"),
            cookie: Cookies(from: headers["Cookie"])[session]?.value
        )
        .map(SessionToken.init)
    }

    /// `XSRF-TOKEN` readable by scripts (some clients force-unwrap it), and the session itself HttpOnly.
    /// `secure`: the client's connection is HTTPS, so the browser must never send them over plain HTTP (a
    /// network attacker could otherwise lure it to `http://` and read the session there).
    static func set(on headers: inout HTTPFields, token: SessionToken, xsrf: String, maxAge: Int, secure: Bool) {
        headers[values: .setCookie].append(cookie(self.xsrf, xsrf, maxAge: maxAge, httpOnly: false, secure: secure))
        headers[values: .setCookie].append(cookie(session, token.rawValue, maxAge: maxAge, httpOnly: true, secure: secure))
    }

    static func clear(on headers: inout HTTPFields, secure: Bool) {
        headers[values: .setCookie].append(cookie(xsrf, "", maxAge: 0, httpOnly: false, secure: secure))
        headers[values: .setCookie].append(cookie(session, "", maxAge: 0, httpOnly: true, secure: secure))
    }

    private static func cookie(_ name: String, _ value: String, maxAge: Int, httpOnly: Bool, secure: Bool) -> String {
        Cookie(name: name, value: value, maxAge: maxAge, path: "/", secure: secure, httpOnly: httpOnly, sameSite: .lax).description
    }
}

/// Browser writes from another site's pages are refused: a request that names an `Origin` other than the
/// host it was sent to, or that the browser marks `Sec-Fetch-Site: cross-site`. Apps send neither.
enum OriginCheck {
    static func isCrossSite(_ headers: HTTPHeaders) -> Bool {
        isCrossSite(site: headers.first(name: "Sec-Fetch-Site"), origin: headers.first(name: "Origin"), host: headers.first(name: "Host"))
    }

    /// `host` is the authority the request was sent to (its `Host` header).
    static func isCrossSite(site: String?, origin: String?, host: String?) -> Bool {
        if site?.lowercased() == "cross-site" { return true }
        guard let origin else { return false }
        if origin == "null" { return true }
        let originHost = origin.split(separator: "/", omittingEmptySubsequences: true).dropFirst().first.map(String.init)
        return originHost?.lowercased() != host?.lowercased()
    }

    /// The same, for a request the router answers (its authority is the `Host` it was sent to).
    static func isCrossSite(_ request: Request) -> Bool {
        isCrossSite(
            site: request.headers[HTTPField.Name("Sec-Fetch-Site")!], origin: request.headers[HTTPField.Name("Origin")!],
            host: request.head.authority)
    }

    static func hasBrowserOrigin(_ request: Request) -> Bool {
        request.headers[HTTPField.Name("Origin")!] != nil || request.headers[HTTPField.Name("Sec-Fetch-Site")!] != nil
    }

    /// A browser page's request must show it read the XSRF cookie (`X-XSRF-TOKEN` equal to it); apps send a
    /// wrong one or none, and are not browser pages.
    static func requireXSRF(_ request: Request) throws(GatewayError) {
        guard hasBrowserOrigin(request) else { return }
        guard let cookie = request.cookies[SessionCookies.xsrf]?.value, !cookie.isEmpty,
            request.headers[HTTPField.Name("X-XSRF-TOKEN")!] == cookie
        else { throw .xsrfMismatch }
    }
}
