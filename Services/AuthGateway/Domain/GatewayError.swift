import Logging
import OnTheMapShared
import ServiceKit

/// Everything the gateway itself refuses, by meaning. `GatewayErrorMiddleware` writes each one in the
/// shape of the route family it happened in: `{status, parameter, error}` (with the 5-byte prefix on the
/// session and users routes) or Parse's `{code, error}` on the StudentLocation routes.
enum GatewayError: Error, Equatable {
    case malformedBody(String)
    case missingParameter(String)
    case notExactlyOneCredential
    case unsupportedCredential(String)
    case invalidCredentials
    /// An operator disabled the account (`auth-gateway accounts disable`).
    case accountDisabled
    case throttled(retryAfter: Int)
    case tooManySignUps(retryAfter: Int)
    case rateLimited(retryAfter: Int)
    case tooLong(parameter: String, limit: Int)
    case tooManyStreams(limit: Int)
    case identityUnavailable
    case identityTimedOut
    /// The browser came back from the identity provider without the state cookie its sign-in began with.
    case signInNotStartedHere
    /// The sign-in's state is unknown: it expired, or was finished already.
    case signInUnknown
    /// The identity provider refused the sign-in, or its answer could not be verified; the reason is for the user.
    case signInRefused(String)
    /// The ID token verified, but the groups it names cannot be kept whole (`OIDCGroups`): signing in again
    /// changes nothing until the provider sends others. The reason is for the user and the operator.
    case signInGroupsRefused(String)
    /// A command-line sign-in's code is unknown, used or expired, or the verifier shown with it is not its own.
    case signInCodeRefused
    /// No OpenID Connect provider is configured (`OIDC_ISSUER`).
    case signInNotConfigured
    case userNotFound
    case invalidSignUp(parameter: String, message: String)
    case emailTaken
    case signUpUnavailable
    case xsrfMismatch
    case notLoggedIn
    case notLoggedInToErase
    case crossOrigin
    case locationsUnavailable
    case databaseUnavailable
    case bodyTooLarge(limit: Int)
    case pinNotFound
    /// No class map has this slug, or the caller may not know of it.
    case mapNotFound
    /// `MAP_CREATORS` names who may create maps, and the caller is not among them.
    case mapCreationRestricted
    case notLoggedInForMaps
    case invalidQuery(String)
    case geocodeQueryMissing
    case noGeocodeMatch(String)
    case geocoderUnavailable
    case geocoderTimedOut
    /// No route serves the path.
    case noRoute(method: String, path: String)
    /// The path is served, but not for this method; `allowed` are the methods it takes.
    case methodNotAllowed(method: String, path: String, allowed: [String])
    case internalFailure

    var message: String {
        switch self {
        case .malformedBody(let detail): detail
        case .missingParameter(let name): "trails.Error 400: Missing parameter '\(name.split(separator: ".").last ?? Substring(name))'"
        case .notExactlyOneCredential: "Did not specify exactly one credential."
        case .unsupportedCredential(let kind): "\(kind) login is not available on this server; log in with your email and password."
        case .invalidCredentials: LoginRefusal.invalidCredentials
        case .accountDisabled: LoginRefusal.accountDisabled
        case .throttled(let seconds): "Too many failed logins; try again in \(seconds) seconds."
        case .tooManySignUps(let seconds): "Too many sign-ups from your address; try again in \(seconds) seconds."
        case .rateLimited(let seconds): "Too many pins posted, changed or deleted in a short time; try again in \(seconds) seconds."
        case .tooLong(let name, let limit): "\(name.split(separator: ".").last ?? Substring(name)) must be at most \(limit) bytes."
        case .tooManyStreams(let limit): "Too many live streams open from your address (at most \(limit)); close one and try again."
        case .identityUnavailable: "The identity provider could not be reached; try again shortly."
        case .identityTimedOut: "The identity provider did not answer in time; try again shortly."
        case .signInNotStartedHere: "This sign-in was not started in this browser; start again from the login page."
        case .signInUnknown: "This sign-in has expired or was finished already; start again from the login page."
        case .signInRefused(let reason): "The identity provider did not vouch for this sign-in: \(reason). Sign in again."
        case .signInGroupsRefused(let reason): "This sign-in cannot be finished: \(reason). Ask this server's operator."
        case .signInCodeRefused: "This sign-in code is unknown, used or expired, or does not match its verifier; sign in again."
        case .signInNotConfigured: "This server offers no sign-in with an identity provider; log in with your email and password."
        case .userNotFound: "User not found."
        case .invalidSignUp(_, let message): message
        case .emailTaken: "An account with this email already exists."
        case .signUpUnavailable: "Accounts are created with the identity provider, not here."
        case .xsrfMismatch: "The X-XSRF-TOKEN header does not match the XSRF-TOKEN cookie."
        case .notLoggedIn: "Log in to post, change or delete a pin."
        case .notLoggedInToErase: "Log in to erase your account."
        case .crossOrigin: "Writes from another site's pages are not allowed."
        case .locationsUnavailable: "The locations service is unavailable; try again shortly."
        case .databaseUnavailable: "The database is unavailable; try again shortly."
        case .bodyTooLarge(let limit): "The request body is larger than \(limit / 1024) KiB."
        case .pinNotFound: "Object not found."
        case .mapNotFound: "No such map."
        case .mapCreationRestricted: "Creating maps is limited to the accounts this server names; ask its operator."
        case .notLoggedInForMaps: "Log in to create, join or run a map."
        case .invalidQuery(let message): message
        case .geocodeQueryMissing: "Add the place to look up as ?q=, for example ?q=Mountain%20View,%20CA."
        case .noGeocodeMatch(let query): "No place matches \"\(query)\"."
        case .geocoderUnavailable: "The geocoder could not be reached; try again shortly."
        case .geocoderTimedOut: "The geocoder did not answer in time; try again shortly."
        case .noRoute(let method, let path): "No route for \(method) \(path)."
        case .methodNotAllowed(let method, let path, _): "\(method) is not allowed on \(path)."
        case .internalFailure: "Internal server error."
        }
    }

    var parameter: String? {
        switch self {
        case .missingParameter(let name): name
        case .invalidSignUp(let parameter, _): parameter
        case .tooLong(let parameter, _): parameter
        default: nil
        }
    }

    /// What any failure means to the client, decided in this one place for both doors: a `GatewayError` as
    /// it is; the database away or too slow is 503 (it will be back); anything else is a bug, logged, 500.
    static func meaning(of error: any Error, logger: Logger, requestID: String? = nil) -> GatewayError {
        var metadata: Logger.Metadata = ["error": "\(String(reflecting: error))"]
        if let requestID { metadata["request_id"] = "\(requestID)" }
        switch error {
        case let error as GatewayError:
            if error == .internalFailure { logger.error("request failed", metadata: metadata) }
            return error
        case _ where Database.isOutage(error):
            logger.warning("database unavailable", metadata: metadata)
            return .databaseUnavailable
        default:
            logger.error("request failed", metadata: metadata)
            return .internalFailure
        }
    }
}
