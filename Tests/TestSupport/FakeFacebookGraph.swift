import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import ServiceKit
import ServiceLifecycle

/// A stand-in for Facebook's Graph API on 127.0.0.1 that answers `GET /debug_token` and `GET /me` in
/// Graph's own JSON, refusals included, so the gateway's check of the apps' Facebook logins is tested over
/// a real socket. It knows one app (`appID`, `appSecret`: `debug_token` wants that app's token) and the
/// tokens in `Token`; like Graph for an app set to "Require App Secret", `/me` wants the token's
/// `appsecret_proof`.
public enum FakeFacebookGraph {
    public static let appID = "1407203869581131"
    public static let appSecret = "5be0c1d7a94f3e2b8c6d1a0f9e7b3c42"

    public struct Person: Sendable {
        public let id: String
        public let firstName: String
        public let lastName: String
        /// Empty when the user did not let the app read their address.
        public let email: String
    }

    public static let grace = Person(id: "10158812345678901", firstName: "Grace", lastName: "Hopper", email: "grace@facebook.example")
    public static let ada = Person(id: "10158800000000002", firstName: "Ada", lastName: "Lovelace", email: "")

    /// The tokens the fake knows, named by what Graph says of them; any other is one Graph cannot read.
    public enum Token {
        /// Grace's, valid, issued to the app.
        public static let grace = "EAAUAbZBo0WvsBAGfZCZAy0aHZB9mQ1ZAvXk7ZBgrace"
        /// Ada's, valid, issued to the app.
        public static let ada = "EAAUAbZBo0WvsBAAqZBZAtZCq7ZB2ZAfLm8ZCnWada"
        /// Grace's, valid, but issued to another Facebook app.
        public static let otherApp = "EAAJq1ZBothrZAppZCZAkZB4sZA0ZAqotherapp"
        /// Grace's, expired: not valid, with Graph's "session has expired" (190, 463).
        public static let expired = "EAAUAbZBo0WvsBAExpZCZAe9ZB0ZAqexpired"
        /// Grace's, said valid by a late answer whose `expires_at` has passed.
        public static let lapsed = "EAAUAbZBo0WvsBALapZCZAd2ZB7ZAqlapsed"
        /// Said valid by `debug_token`, refused by `/me`: the user logged out in between (190, 460).
        public static let revoked = "EAAUAbZBo0WvsBARevZCZAk3ZB1ZAqrevoked"
        /// A page's token issued to the app: valid, but nobody's login.
        public static let page = "EAAUAbZBo0WvsBAPageZCZAx8ZB5ZAqpage"
        /// `debug_token` answers it only when the server stops.
        public static let slow = "EAAUAbZBo0WvsBASlowZCZAz6ZB2ZAqslow"
    }

    /// The token of the app that `debug_token` is asked with: `app_id|app_secret`.
    public static var appToken: String { appID + "|" + appSecret }

    static func router() -> Router<BasicRequestContext> {
        let router = Router()
        router.get("debug_token") { request, _ -> Response in
            let query = request.uri.queryParameters
            guard query.get("access_token") == appToken else {
                return error(190, "Invalid OAuth access token signature.")
            }
            guard let token = query.get("input_token") else { return error(100, "(#100) The parameter input_token is required") }
            let now = Int(Date().timeIntervalSince1970)
            switch token {
            case Token.grace, Token.revoked: return facts(user: grace.id, expiresAt: now + 60 * 86_400)
            case Token.ada: return facts(user: ada.id, expiresAt: now + 60 * 86_400)
            case Token.otherApp: return facts(user: grace.id, app: "1999999999999999", application: "Another App", expiresAt: now + 86_400)
            case Token.lapsed: return facts(user: grace.id, expiresAt: now - 60)
            case Token.page: return facts(user: nil, type: "PAGE", expiresAt: 0)
            case Token.expired:
                return json(
                    #"""
                    {"data":{"app_id":"\#(appID)","type":"USER","application":"On The Map","data_access_expires_at":\#(now + 86_400 * 30),"error":{"code":190,"message":"Error validating access token: Session has expired on Tuesday, 10-Mar-15 16:00:00 PDT. The current time is Wednesday, 11-Mar-15 02:48:18 PDT.","subcode":463},"expires_at":\#(now - 86_400),"is_valid":false,"scopes":["public_profile","email"],"user_id":"\#(grace.id)"}}
                    """#)
            case Token.slow:
                // Longer than any test waits: until the server stops, which is then not held up by it.
                try await gracefulShutdown()
                return error(2, "An unexpected error has occurred. Please retry your request later.", status: .internalServerError)
            default:
                // A string Graph cannot read as a token is refused in `data`, as its checks of a token are.
                return json(#"{"data":{"error":{"code":190,"message":"Invalid OAuth access token."},"is_valid":false,"scopes":[]}}"#)
            }
        }
        router.get("me") { request, _ -> Response in
            let query = request.uri.queryParameters
            guard let token = query.get("access_token") else {
                return error(2500, "An active access token must be used to query information about the current user.")
            }
            guard let proof = query.get("appsecret_proof") else {
                return error(100, "API calls from the server require an appsecret_proof argument", type: "GraphMethodException")
            }
            let expected = HMAC<SHA256>.authenticationCode(for: Array(token.utf8), using: SymmetricKey(data: Array(appSecret.utf8)))
            guard proof == expected.hexString else {
                return error(100, "Invalid appsecret_proof provided in the API argument", type: "GraphMethodException")
            }
            let person: Person
            // Every token of a person is answered, whatever `debug_token` said of it: only the gateway's checks
            // of that answer stand between an expired token, or another app's, and a login.
            switch token {
            case Token.grace, Token.otherApp, Token.expired, Token.lapsed: person = grace
            case Token.ada: person = ada
            case Token.revoked:
                return error(
                    190,
                    "Error validating access token: The session has been invalidated because the user changed their password or Facebook has changed the session for security reasons.",
                    subcode: 460)
            default: return error(190, "Invalid OAuth access token - Cannot parse access token")
            }
            // The fields asked for, of those the user let the app read.
            let fields = Set((query.get("fields") ?? "id,name").split(separator: ",").map(String.init))
            var profile: [String: String] = [
                "id": person.id, "name": "\(person.firstName) \(person.lastName)", "first_name": person.firstName, "last_name": person.lastName,
            ]
            if !person.email.isEmpty { profile["email"] = person.email }
            return json(String(decoding: try JSONEncoder().encode(profile.filter { fields.contains($0.key) }), as: UTF8.self))
        }
        return router
    }

    /// `debug_token`'s answer for a token Graph finds valid.
    private static func facts(
        user: String?, app: String = appID, application: String = "On The Map", type: String = "USER", expiresAt: Int
    ) -> Response {
        let userField = user.map { #","user_id":"\#($0)""# } ?? ""
        let issued = Int(Date().timeIntervalSince1970) - 3600
        return json(
            #"""
            {"data":{"app_id":"\#(app)","type":"\#(type)","application":"\#(application)","data_access_expires_at":\#(issued + 90 * 86_400),"expires_at":\#(expiresAt),"is_valid":true,"issued_at":\#(issued),"scopes":["public_profile","email"]\#(userField)}}
            """#)
    }

    /// A refusal as Graph words one: 400 and `{"error":{…}}`.
    private static func error(
        _ code: Int, _ message: String, type: String = "OAuthException", subcode: Int? = nil, status: HTTPResponse.Status = .badRequest
    ) -> Response {
        let subcodeField = subcode.map { #","error_subcode":\#($0)"# } ?? ""
        return json(
            #"{"error":{"message":"\#(message)","type":"\#(type)","code":\#(code)\#(subcodeField),"fbtrace_id":"AQwD4yX2mBq"}}"#, status: status)
    }

    private static func json(_ text: String, status: HTTPResponse.Status = .ok) -> Response {
        Response(status: status, headers: [.contentType: "application/json; charset=UTF-8"], body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    private static let quietLogger = {
        var logger = Logger(label: "fake-facebook-graph")
        logger.logLevel = .critical
        return logger
    }()

    /// Runs `body` with the base URL of a fake Graph API on a free loopback port, then stops it.
    public static func withServer<T: Sendable>(_ body: @escaping @Sendable (String) async throws -> T) async throws -> T {
        let app = Application(router: router(), configuration: .init(address: .hostname("127.0.0.1", port: 0)), logger: quietLogger)
        return try await app.withLoopbackServer { port in try await body("http://127.0.0.1:\(port)") }
    }
}
