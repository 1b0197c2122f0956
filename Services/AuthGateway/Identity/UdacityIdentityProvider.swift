import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import ServiceKit

/// Forwards the login to a Udacity-compatible API (`UDACITY_BASE_URL`), then reads the account's names
/// from its `/users/{key}`. Its answers start with the 5-byte prefix, which is stripped here.
struct UdacityIdentityProvider: IdentityProvider {
    let baseURL: String
    let httpClient: HTTPClient
    let accounts: AccountStore
    let timeout: TimeAmount
    let logger: Logger

    var allowsSignUp: Bool { false }

    func authenticate(username: EmailAddress, password: String) async throws(LoginError) -> Account {
        let body = try? JSONSerialization.data(withJSONObject: ["udacity": ["username": username.text, "password": password]])
        let (status, session) = try await call("POST", "/session", body: body)
        switch status {
        case 200: break
        case 400, 401, 403: throw .invalidCredentials
        default: throw .upstreamFailed(status: status)
        }
        guard let key = (session["account"] as? [String: Any])?["key"].flatMap(Self.text), !key.isEmpty else {
            logger.warning("Udacity login answer had no account key")
            throw .upstreamFailed(status: status)
        }
        let (userStatus, profile) = try await call(
            "GET", "/users/\(key.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? key)", body: nil)
        guard userStatus == 200 else { throw .upstreamFailed(status: userStatus) }
        // v1 answers the user unwrapped; older versions wrap it in "user".
        let user = (profile["user"] as? [String: Any]) ?? profile
        let account = Account(
            key: key, provider: "udacity", email: username.text,
            firstName: (user["first_name"] as? String) ?? "",
            lastName: (user["last_name"] as? String) ?? "")
        do {
            try await accounts.upsertExternal(account)
        } catch {
            logger.error("could not record the Udacity account", metadata: ["error": "\(String(reflecting: error))"])
            throw .internalFailure
        }
        return account
    }

    private static func text(_ value: Any) -> String? {
        if let string = value as? String { return string }
        if let number = value as? NSNumber { return number.stringValue }
        return nil
    }

    private func call(_ method: String, _ path: String, body: Data?) async throws(LoginError) -> (Int, [String: Any]) {
        var request = HTTPClientRequest(url: baseURL + path)
        request.method = HTTPMethod(rawValue: method)
        request.headers.add(name: "Accept", value: "application/json")
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: body))
        }
        let start = ContinuousClock.now
        do {
            let response = try await httpClient.execute(request, timeout: timeout)
            var bytes = try await response.body.collect(upTo: 1 << 20)
            OperatorMetrics.called("identity-provider", result: "ok", since: start)
            if bytes.readableBytesView.starts(with: Array(")]}'\n".utf8)) { bytes.moveReaderIndex(forwardBy: 5) }
            let json = (try? JSONSerialization.jsonObject(with: Data(bytes.readableBytesView))) as? [String: Any] ?? [:]
            return (Int(response.status.code), json)
        } catch let error as HTTPClientError where error == .deadlineExceeded || error == .readTimeout || error == .connectTimeout {
            OperatorMetrics.called("identity-provider", result: "timeout", since: start)
            logger.warning("Udacity did not answer in time", metadata: ["error": "\(error)"])
            throw .upstreamTimedOut
        } catch {
            OperatorMetrics.called("identity-provider", result: "unavailable", since: start)
            logger.warning("Udacity unreachable", metadata: ["error": "\(String(reflecting: error))"])
            throw .upstreamUnavailable
        }
    }
}
