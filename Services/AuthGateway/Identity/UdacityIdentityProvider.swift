import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import OnTheMapShared
import ServiceKit

/// Forwards the login to a Udacity-compatible API (`UDACITY_BASE_URL`), then reads the account's names
/// from its `/users/{key}`. Its answers start with the 5-byte prefix, which is stripped here.
struct UdacityIdentityProvider: IdentityProvider {
    let baseURL: String
    let httpClient: HTTPClient
    let accounts: any AccountStore
    let timeout: TimeAmount
    let logger: Logger

    var allowsSignUp: Bool { false }
    /// Udacity's API took the token the apps got from Facebook's SDK, and so may an upstream that speaks it.
    var acceptsFacebook: Bool { true }

    func authenticate(_ credential: Credential) async throws(LoginError) -> Account {
        // The credential is sent on as the apps sent it to Udacity.
        var body = JSONWriter()
        body.beginObject()
        switch credential {
        case .password(let username, let password):
            body.key("udacity")
            body.beginObject()
            body.field("username", username.text)
            body.field("password", password)
        case .facebook(let accessToken):
            body.key("facebook_mobile")
            body.beginObject()
            body.field("access_token", accessToken)
        }
        body.endObject()
        body.endObject()
        let (status, session) = try await call("POST", "/session", body: body.buffer, reading: SessionAnswer.self)
        switch status {
        case 200: break
        case 400, 401, 403: throw .invalidCredentials
        default: throw .upstreamFailed(status: status)
        }
        guard let key = session?.key, !key.isEmpty else {
            logger.warning("Udacity login answer had no account key")
            throw .upstreamFailed(status: status)
        }
        let (userStatus, user) = try await call(
            "GET", "/users/\(key.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? key)", body: nil,
            reading: UserAnswer.self)
        guard userStatus == 200 else { throw .upstreamFailed(status: userStatus) }
        // A Facebook login names no address: the profile's is taken, as it is for every login.
        var email = user?.email ?? ""
        if case .password(let username, _) = credential { email = username.text }
        let account = Account(key: key, provider: "udacity", email: email, firstName: user?.firstName ?? "", lastName: user?.lastName ?? "")
        do {
            try await accounts.upsertExternal(account)
        } catch {
            logger.error("could not record the Udacity account", metadata: ["error": "\(String(reflecting: error))"])
            throw .internalFailure
        }
        return account
    }

    /// The answer's status, and its body read as `Answer` (nil when it is not one).
    private func call<Answer: Decodable>(
        _ method: String, _ path: String, body: ByteBuffer?, reading _: Answer.Type
    ) async throws(LoginError) -> (Int, Answer?) {
        var request = HTTPClientRequest(url: baseURL + path)
        request.method = HTTPMethod(rawValue: method)
        request.headers.add(name: "Accept", value: "application/json")
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(body)
        }
        let (status, answer) = try await IdentityUpstream.call(request, on: httpClient, timeout: timeout, naming: "Udacity", logger: logger)
        var bytes = answer
        if bytes.readableBytesView.starts(with: Array(")]}'\n".utf8)) { bytes.moveReaderIndex(forwardBy: 5) }
        return (status, try? JSONDecoder().decode(Answer.self, from: Data(bytes.readableBytesView)))
    }
}

extension UdacityIdentityProvider {
    /// What the gateway reads of `POST /session`'s answer: `account.key`, a string or a number.
    struct SessionAnswer: Decodable {
        enum CodingKeys: CodingKey {
            case account
            case key
        }
        var key: String?

        init(from decoder: any Decoder) throws {
            let account = try decoder.container(keyedBy: CodingKeys.self).nestedContainer(keyedBy: CodingKeys.self, forKey: .account)
            key = account.identifierIfPresent(.key)
        }
    }

    /// What the gateway reads of `GET /users/{key}`'s answer: the names and the address, which may be missing.
    struct UserAnswer: Decodable {
        enum CodingKeys: String, CodingKey {
            case user
            case firstName = "first_name"
            case lastName = "last_name"
            case email
            case address
        }
        var firstName: String?
        var lastName: String?
        var email: String?

        init(from decoder: any Decoder) throws {
            let answer = try decoder.container(keyedBy: CodingKeys.self)
            // v1 answers the user unwrapped; older versions wrap it in "user".
            let user = (try? answer.nestedContainer(keyedBy: CodingKeys.self, forKey: .user)) ?? answer
            firstName = user.stringIfPresent(.firstName)
            lastName = user.stringIfPresent(.lastName)
            email = (try? user.nestedContainer(keyedBy: CodingKeys.self, forKey: .email))?.stringIfPresent(.address)
        }
    }
}
