import Foundation
import Hummingbird
import OnTheMapShared

/// The most a session or sign-up body may hold: a few fields of at most a few hundred bytes each.
let maximumJSONBodySize = 16 * 1024

/// Reads a request body of at most `limit` bytes as a `Body`. The gateway's body types read each field
/// leniently (see `stringIfPresent`), so what fails here is a body that is not a JSON object.
func readJSONBody<Body: Decodable>(_ request: Request, as _: Body.Type, limit: Int = maximumJSONBodySize) async throws -> Body {
    let body: ByteBuffer
    do {
        body = try await request.body.collect(upTo: limit)
    } catch {
        throw GatewayError.bodyTooLarge(limit: limit)
    }
    do {
        return try JSONDecoder().decode(Body.self, from: Data(body.readableBytesView))
    } catch {
        throw GatewayError.malformedBody("The request body must be a JSON object.")
    }
}

/// `POST /v1/session`: `{"udacity": {"username": …, "password": …}}`, or another kind of credential.
struct LoginBody: Decodable {
    enum Kind: String, CodingKey, CaseIterable {
        case udacity
        case facebookMobile = "facebook_mobile"
    }

    struct Credential: Decodable {
        enum CodingKeys: String, CodingKey {
            case username
            case password
            case accessToken = "access_token"
        }
        var username: String?
        var password: String?
        var accessToken: String?

        init(from decoder: any Decoder) throws {
            let fields = try decoder.container(keyedBy: CodingKeys.self)
            username = fields.stringIfPresent(.username)
            password = fields.stringIfPresent(.password)
            accessToken = fields.stringIfPresent(.accessToken)
        }
    }

    /// The kinds of credential the body names, even as `null`: exactly one is allowed.
    var kinds: [Kind]
    /// The `udacity` credential, if it is an object.
    var udacity: Credential?
    /// `facebook_mobile.access_token`, if it is a string.
    var facebookAccessToken: String?

    static let maximumAccessTokenBytes = 4096

    init(from decoder: any Decoder) throws {
        let fields = try decoder.container(keyedBy: Kind.self)
        kinds = Kind.allCases.filter { fields.contains($0) }
        udacity = try? fields.decode(Credential.self, forKey: .udacity)
        facebookAccessToken = (try? fields.decode(Credential.self, forKey: .facebookMobile))?.accessToken
    }
}

/// `POST /v1/accounts`: `{"email", "password", "firstName", "lastName"}`, each checked by the controller.
struct SignUpBody: Decodable {
    enum CodingKeys: CodingKey {
        case email
        case password
        case firstName
        case lastName
    }
    var email: String?
    var password: String?
    var firstName: String?
    var lastName: String?

    init(from decoder: any Decoder) throws {
        let fields = try decoder.container(keyedBy: CodingKeys.self)
        email = fields.stringIfPresent(.email)
        password = fields.stringIfPresent(.password)
        firstName = fields.stringIfPresent(.firstName)
        lastName = fields.stringIfPresent(.lastName)
    }
}
