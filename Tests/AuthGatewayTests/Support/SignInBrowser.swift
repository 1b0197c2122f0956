import AsyncHTTPClient
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import NIOHTTP1
import OnTheMapShared
import TestSupport
import Testing

@testable import AuthGateway

/// Where the gateway is in these tests (`PUBLIC_URL`): `SignInBrowser` sends what is addressed there to the
/// gateway under test, and the provider sends students back to its callback there.
enum SignInGateway {
    static let publicURL = "http://map.test"
    static let callback = publicURL + OIDCSettings.callbackPath
}

/// A browser, as far as a sign-in needs one: it follows redirects, keeps cookies by host (not by port, as
/// browsers do), and fills in the provider's login form. What is addressed to the gateway's public URL goes
/// to the gateway under test.
final class SignInBrowser: @unchecked Sendable {
    let gateway: any TestClientProtocol
    private let http: HTTPClient
    private var cookies: [String: [String: String]] = [:]
    /// Every response on the way, with the URL it answered.
    private(set) var visited: [(url: String, reply: Reply)] = []
    /// While set, the browser stops before going back to the gateway's callback, and `go` answers with the
    /// callback's URL and the provider's redirect to it: a test can take it elsewhere, or change it.
    var holdsCallback = false

    init(gateway: any TestClientProtocol) {
        self.gateway = gateway
        var configuration = HTTPClient.Configuration()
        configuration.redirectConfiguration = .disallow
        http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    deinit { try? http.syncShutdown() }

    /// Goes to `url` and follows redirects to a page that is not one; `form` is posted to `url` first.
    @discardableResult
    func go(to url: String, posting form: [(String, String)]? = nil) async throws -> (url: String, reply: Reply) {
        var current = url
        var method: HTTPRequest.Method = form == nil ? .get : .post
        var body = form.map { PercentEncoding.query($0) }
        for _ in 0..<12 {
            let reply = try await request(method, current, body: body)
            visited.append((current, reply))
            guard [301, 302, 303, 307].contains(reply.status.code), let location = reply.headers[.location] else { return (current, reply) }
            current = resolve(location, against: current)
            if holdsCallback, current.hasPrefix(SignInGateway.publicURL + OIDCSettings.callbackPath) { return (current, reply) }
            method = .get
            body = nil
        }
        throw TooManyRedirects()
    }

    struct TooManyRedirects: Error {}

    /// Signs in at the provider's login page the sign-in led to, then follows where the provider sends the
    /// browser: back to the gateway, or to the command line's loopback address (which is not followed).
    func logIn(at page: (url: String, reply: Reply), username: String, password: String) async throws -> (url: String, reply: Reply) {
        let token = try #require(Self.field("csrfmiddlewaretoken", in: page.reply.body))
        let next = Self.field("next", in: page.reply.body) ?? ""
        return try await go(to: page.url, posting: [("csrfmiddlewaretoken", token), ("username", username), ("password", password), ("next", next)])
    }

    /// The whole sign-in from the gateway's login link to the page the browser ends on.
    @discardableResult
    func signIn(username: String, password: String, from path: String = "/v1/auth/oidc/login") async throws -> (url: String, reply: Reply) {
        let loginPage = try await go(to: SignInGateway.publicURL + path)
        return try await logIn(at: loginPage, username: username, password: password)
    }

    /// The gateway's answer at its callback, the last time the browser came back there.
    var callback: Reply? { visited.last { $0.url.contains("/v1/auth/oidc/callback") }?.reply }

    func cookie(_ name: String, host: String = "map.test") -> String? { cookies[host]?[name] }

    func setCookie(_ name: String, _ value: String?, host: String = "map.test") { cookies[host, default: [:]][name] = value }

    private func request(_ method: HTTPRequest.Method, _ url: String, body: String?) async throws -> Reply {
        guard let components = URLComponents(string: url), let host = components.host else { throw BadURL(url: url) }
        var headers = HTTPFields()
        if let jar = cookies[host], !jar.isEmpty {
            headers[.cookie] = jar.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: "; ")
        }
        if body != nil { headers[.contentType] = "application/x-www-form-urlencoded" }
        let reply: Reply
        if url.hasPrefix(SignInGateway.publicURL + "/") {
            // The loopback listener a command line would run is never reached: a test reads where it leads.
            reply = try await gateway.reply(method, String(url.dropFirst(SignInGateway.publicURL.count)), headers: headers, body: body)
        } else if host == "127.0.0.1" && components.path.hasPrefix("/cli") {
            return Reply(status: .ok, headers: [:], body: "")
        } else {
            var outgoing = HTTPClientRequest(url: url)
            outgoing.method = HTTPMethod(rawValue: method.rawValue)
            // One Cookie line, as browsers send over HTTP/1.1 (HTTPFields keeps each cookie as a field of its own).
            for field in headers where field.name != .cookie { outgoing.headers.add(name: field.name.rawName, value: field.value) }
            if let cookie = headers[.cookie] { outgoing.headers.add(name: "Cookie", value: cookie) }
            if let body { outgoing.body = .bytes(ByteBuffer(string: body)) }
            let response = try await http.execute(outgoing, timeout: .seconds(30))
            var fields = HTTPFields()
            for (name, value) in response.headers { fields.append(HTTPField(name: HTTPField.Name(name)!, value: value)) }
            let bytes = try await response.body.collect(upTo: 1 << 20)
            reply = Reply(status: .init(code: Int(response.status.code)), headers: fields, body: String(buffer: bytes))
        }
        // A cookie set empty (with Max-Age=0) is cleared.
        for line in reply.headers[values: .setCookie] {
            let pair = line.split(separator: ";")[0].split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard pair.count == 2 else { continue }
            cookies[host, default: [:]][String(pair[0])] = pair[1].isEmpty ? nil : String(pair[1])
        }
        return reply
    }

    struct BadURL: Error { let url: String }

    private func resolve(_ location: String, against base: String) -> String {
        if location.hasPrefix("http://") || location.hasPrefix("https://") { return location }
        guard var components = URLComponents(string: base) else { return location }
        let target = URLComponents(string: location)
        components.percentEncodedPath = target?.percentEncodedPath ?? location
        components.percentEncodedQuery = target?.percentEncodedQuery
        return components.string ?? location
    }

    /// The value of the form field `name` in a page (its `value` written right after its `name`, as the
    /// provider's template and Django write them).
    static func field(_ name: String, in html: String) -> String? {
        guard let range = html.range(of: "name=\"\(name)\" value=\"") else { return nil }
        let rest = html[range.upperBound...]
        guard let end = rest.firstIndex(of: "\"") else { return nil }
        return String(rest[..<end]).replacingOccurrences(of: "&amp;", with: "&")
    }
}
