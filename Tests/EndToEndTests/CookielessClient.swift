import Foundation
import TestSupport

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Requests without a cookie store: the test process's shared one keeps other tests' cookies for 127.0.0.1,
/// whatever their port, and would send them along with these.
struct CookielessClient {
    let port: Int
    let session: URLSession = {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        configuration.httpCookieAcceptPolicy = .never
        return URLSession(configuration: configuration)
    }()

    func send(
        _ method: String, _ path: String, body: String? = nil, headers: [String: String] = [:]
    ) async throws -> (status: Int, body: String, cookies: [String: String]) {
        let url = URL(string: "http://127.0.0.1:\(port)\(path)")!
        var request = URLRequest(url: url, timeoutInterval: 10)
        request.httpMethod = method
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        request.httpBody = body.map { Data($0.utf8) }
        let (data, response) = try await session.data(for: request)
        let answer = response as! HTTPURLResponse
        let fields = answer.allHeaderFields.reduce(into: [String: String]()) { fields, field in
            if let name = field.key as? String, let value = field.value as? String { fields[name] = value }
        }
        let cookies = HTTPCookie.cookies(withResponseHeaderFields: fields, for: url).reduce(into: [String: String]()) { $0[$1.name] = $1.value }
        return (answer.statusCode, String(decoding: data, as: UTF8.self), cookies)
    }

    /// Signs a new student up, then in: the session's id.
    func newStudentSession(email: String, firstName: String, lastName: String) async throws -> String {
        let account = #"{"email":"\#(email)","password":"correct horse battery","firstName":"\#(firstName)","lastName":"\#(lastName)"}"#
        let created = try await send("POST", "/v1/accounts", body: account)
        guard created.status == 201 else { throw HarnessError("sign-up: \(created.status) \(created.body)") }
        let login = try await send("POST", "/v1/session", body: #"{"udacity":{"username":"\#(email)","password":"correct horse battery"}}"#)
        guard let id = login.body.firstMatch(of: /"id":"([^"]+)"/)?.1 else { throw HarnessError("login: \(login.status) \(login.body)") }
        return String(id)
    }
}
