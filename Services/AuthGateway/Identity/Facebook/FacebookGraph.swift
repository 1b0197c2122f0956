import AsyncHTTPClient
import Crypto
import Foundation
import Logging
import NIOCore
import OnTheMapShared
import ServiceKit

/// Facebook's Graph API, as much of it as a login needs: whether an access token is a live user token of
/// our app (`debug_token`, asked with the app's own token), then whose it is (`/me`). Graph refusing the
/// token is a wrong credential; Graph away, silent or answering nonsense is an outage.
struct FacebookGraph: Sendable {
    let settings: FacebookSettings
    let httpClient: HTTPClient
    /// For both calls together: a login waits no longer than this for Facebook.
    let timeout: TimeAmount
    let clock: any WallClock
    let logger: Logger

    /// A Facebook user as `/me` describes them. `id` is scoped to our app: the same person has another
    /// id in another app.
    struct Person: Sendable, Equatable {
        var id: String
        var firstName: String
        var lastName: String
        /// Empty when the user did not let the app read it.
        var email: String
    }

    /// The person the token belongs to, once Graph vouched for it.
    func person(holding token: String) async throws(LoginError) -> Person {
        let deadline = NIODeadline.now() + timeout
        let appToken = settings.appID + "|" + settings.appSecret
        let facts = try await call(
            "debug_token", [("input_token", token), ("access_token", appToken)], reading: TokenFacts.self, before: deadline)
        let userID: String
        do {
            userID = try facts.userID(forApp: settings.appID, at: clock.now)
        } catch {
            logger.info("a Facebook token was refused", metadata: ["reason": "\(error)"])
            throw .invalidCredentials
        }
        // appsecret_proof: Graph requires it of apps set to "Require App Secret", and takes it from any.
        let proof = HMAC<SHA256>.authenticationCode(for: Array(token.utf8), using: SymmetricKey(data: Array(settings.appSecret.utf8)))
        let person = try await call(
            "me", [("fields", "id,name,first_name,last_name,email"), ("access_token", token), ("appsecret_proof", proof.hexString)],
            reading: Profile.self, before: deadline
        ).person
        guard person.id == userID else {
            logger.warning("Facebook's Graph API named another user for a token than it had checked")
            throw .invalidCredentials
        }
        return person
    }

    /// One call's answer read as `Answer`. Graph words every refusal `{"error":{"message","type","code",
    /// "error_subcode","fbtrace_id"}}`; only its numbers are logged, never the call's address (it holds a token).
    private func call<Answer: Decodable>(
        _ path: String, _ query: [(String, String)], reading _: Answer.Type, before deadline: NIODeadline
    ) async throws(LoginError) -> Answer {
        var request = HTTPClientRequest(url: settings.graphURL + "/" + path + "?" + PercentEncoding.query(query))
        request.headers.add(name: "Accept", value: "application/json")
        let (status, body) = try await IdentityUpstream.call(
            request, on: httpClient, timeout: deadline - .now(), naming: "Facebook's Graph API", logger: logger)
        let bytes = Data(body.readableBytesView)
        if status < 500, let error = (try? JSONDecoder().decode(ErrorAnswer.self, from: bytes))?.error {
            let metadata: Logger.Metadata = [
                "call": "\(path)", "status": "\(status)", "code": "\(error.code ?? 0)", "subcode": "\(error.subcode ?? 0)",
            ]
            if path == "debug_token" {
                // debug_token words a checked token's faults inside `data`: refusing the call itself may be about
                // the app's own token (a malformed token is refused so too), which only the operator can mend.
                logger.warning(
                    "Facebook's Graph API would not check a token; if it refuses every one, check FACEBOOK_APP_ID and FACEBOOK_APP_SECRET",
                    metadata: metadata)
            } else {
                logger.info("Facebook's Graph API refused a token", metadata: metadata)
            }
            throw .invalidCredentials
        }
        guard status == 200, let answer = try? JSONDecoder().decode(Answer.self, from: bytes) else {
            logger.warning("Facebook's Graph API gave an answer a login cannot use", metadata: ["call": "\(path)", "status": "\(status)"])
            throw .upstreamFailed(status: status)
        }
        return answer
    }
}

extension FacebookGraph {
    /// Why a token `debug_token` described is no login here.
    enum Refusal: Error, Equatable, CustomStringConvertible {
        /// Graph says the token is not valid (expired, revoked, forged), with its code and subcode.
        case notValid(code: Int?, subcode: Int?)
        case otherApp
        case notAUserToken
        case expired

        var description: String {
            switch self {
            case .notValid(let code, let subcode): "Facebook says it is not valid (code \(code ?? 0), subcode \(subcode ?? 0))"
            case .otherApp: "it was issued to another Facebook app"
            case .notAUserToken: "it is not a user's token"
            case .expired: "it has expired"
            }
        }
    }

    /// What `debug_token` says of a token, under `data`.
    struct TokenFacts: Decodable, Sendable {
        enum CodingKeys: String, CodingKey {
            case data
            case appID = "app_id"
            case type
            case isValid = "is_valid"
            case expiresAt = "expires_at"
            case userID = "user_id"
            case error
        }
        var appID: String?
        var type: String?
        var isValid: Bool
        /// Seconds since 1970; 0 for a token that does not expire.
        var expiresAt: Int64?
        var userID: String?
        var error: GraphError?

        init(appID: String?, type: String?, isValid: Bool, expiresAt: Int64?, userID: String?, error: GraphError? = nil) {
            self.appID = appID
            self.type = type
            self.isValid = isValid
            self.expiresAt = expiresAt
            self.userID = userID
            self.error = error
        }

        init(from decoder: any Decoder) throws {
            let data = try decoder.container(keyedBy: CodingKeys.self).nestedContainer(keyedBy: CodingKeys.self, forKey: .data)
            appID = data.identifierIfPresent(.appID)
            type = data.stringIfPresent(.type)
            isValid = (try? data.decode(Bool.self, forKey: .isValid)) ?? false
            expiresAt = try? data.decode(Int64.self, forKey: .expiresAt)
            userID = data.identifierIfPresent(.userID)
            error = try? data.decode(GraphError.self, forKey: .error)
        }

        /// The user whose token it is, if it is valid, a user's, issued to `app` and not expired at `now`.
        func userID(forApp app: String, at now: Timestamp) throws(Refusal) -> String {
            guard isValid else { throw .notValid(code: error?.code, subcode: error?.subcode) }
            guard appID == app else { throw .otherApp }
            guard type == "USER", let userID, !userID.isEmpty else { throw .notAUserToken }
            // Checked here too: Graph may answer from a cache for a moment after the token's end.
            if let expiresAt, expiresAt != 0, expiresAt * 1000 <= now.millisecondsSince1970 { throw .expired }
            return userID
        }
    }

    /// Graph's `error` object, as far as the logs need it: its code, and its subcode (`error_subcode` in a
    /// refusal, `subcode` in `debug_token`'s account of a token).
    struct GraphError: Decodable, Sendable, Equatable {
        enum CodingKeys: String, CodingKey {
            case code
            case errorSubcode = "error_subcode"
            case subcode
        }
        var code: Int?
        var subcode: Int?

        init(from decoder: any Decoder) throws {
            let fields = try decoder.container(keyedBy: CodingKeys.self)
            code = try? fields.decode(Int.self, forKey: .code)
            subcode = (try? fields.decode(Int.self, forKey: .errorSubcode)) ?? (try? fields.decode(Int.self, forKey: .subcode))
        }
    }

    private struct ErrorAnswer: Decodable {
        var error: GraphError
    }

    /// `/me`'s answer: the fields asked for that the user let the app read.
    struct Profile: Decodable {
        enum CodingKeys: String, CodingKey {
            case id
            case name
            case firstName = "first_name"
            case lastName = "last_name"
            case email
        }
        var person: Person

        init(from decoder: any Decoder) throws {
            let fields = try decoder.container(keyedBy: CodingKeys.self)
            guard let id = fields.identifierIfPresent(.id), !id.isEmpty else {
                throw DecodingError.keyNotFound(CodingKeys.id, .init(codingPath: [], debugDescription: "no id"))
            }
            let first = fields.stringIfPresent(.firstName)
            let last = fields.stringIfPresent(.lastName)
            // `name` alone, when Graph gives no parts: all of it as the first name.
            person = Person(
                id: id, firstName: first ?? (last == nil ? fields.stringIfPresent(.name) ?? "" : ""), lastName: last ?? "",
                email: fields.stringIfPresent(.email) ?? "")
        }
    }
}
