import HTTPTypes
import OnTheMapShared

/// How each refusal travels: its status, its Parse code on the StudentLocation routes, and the headers
/// that come with it. The words are the refusal's own (`message`, `parameter`).
extension GatewayError {
    var status: HTTPResponse.Status {
        switch self {
        case .malformedBody, .missingParameter, .notExactlyOneCredential, .invalidSignUp, .tooLong, .geocodeQueryMissing, .invalidQuery,
            .signInNotStartedHere, .signInUnknown:
            .badRequest
        case .invalidCredentials, .accountDisabled, .unsupportedCredential, .signUpUnavailable, .xsrfMismatch, .crossOrigin, .signInRefused,
            .signInGroupsRefused, .signInCodeRefused, .mapCreationRestricted:
            .forbidden
        case .throttled, .tooManySignUps, .rateLimited, .tooManyStreams: .tooManyRequests
        case .identityUnavailable, .geocoderUnavailable: .badGateway
        case .identityTimedOut, .geocoderTimedOut: .gatewayTimeout
        case .userNotFound, .noGeocodeMatch, .pinNotFound, .mapNotFound, .signInNotConfigured, .noRoute: .notFound
        case .methodNotAllowed: .methodNotAllowed
        case .emailTaken: .conflict
        case .notLoggedIn, .notLoggedInToErase, .notLoggedInForMaps: .unauthorized
        case .locationsUnavailable, .databaseUnavailable: .serviceUnavailable
        case .bodyTooLarge: .contentTooLarge
        case .internalFailure: .internalServerError
        }
    }

    /// Parse's numbering, for the StudentLocation routes.
    var parseCode: ParseError.Code {
        switch self {
        case .notLoggedIn, .notLoggedInToErase, .notLoggedInForMaps: .invalidSessionToken
        case .crossOrigin, .xsrfMismatch, .methodNotAllowed, .mapCreationRestricted: .operationForbidden
        case .locationsUnavailable, .databaseUnavailable: .connectionFailed
        case .bodyTooLarge: .validationFailed
        case .malformedBody: .invalidJSON
        case .pinNotFound, .mapNotFound, .noRoute: .objectNotFound
        case .invalidQuery: .invalidQuery
        case .tooManyStreams, .rateLimited: .requestLimitExceeded
        default: .internalServerError
        }
    }

    var extraHeaders: HTTPFields {
        if case .throttled(let seconds) = self { return [.retryAfter: String(seconds)] }
        if case .tooManySignUps(let seconds) = self { return [.retryAfter: String(seconds)] }
        if case .rateLimited(let seconds) = self { return [.retryAfter: String(seconds)] }
        if case .tooManyStreams = self { return [.retryAfter: "10"] }
        if case .methodNotAllowed(_, _, let allowed) = self { return [.allow: allowed.joined(separator: ", ")] }
        if self == .databaseUnavailable || self == .locationsUnavailable { return [.retryAfter: "1"] }
        return [:]
    }
}
