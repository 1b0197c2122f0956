/// What a login presents.
enum Credential: Sendable {
    case password(username: EmailAddress, password: String)
    /// A Facebook access token, as the apps' Facebook login sent it (`facebook_mobile`).
    case facebook(accessToken: String)
}

/// Who vouches for a login's credential. `IDENTITY_PROVIDER` picks one at start-up.
protocol IdentityProvider: Sendable {
    /// The account this credential belongs to.
    func authenticate(_ credential: Credential) async throws(LoginError) -> Account
    /// Whether accounts can be created here (`POST /v1/accounts`).
    var allowsSignUp: Bool { get }
    /// Whether a Facebook access token can be checked here (only an upstream that takes them can).
    var acceptsFacebook: Bool { get }
}

/// Why a login failed, kept apart so the user can tell a typo from an outage.
enum LoginError: Error, Equatable {
    case invalidCredentials
    case upstreamUnavailable
    case upstreamTimedOut
    case upstreamFailed(status: Int)
    /// The account store (PostgreSQL) could not be asked.
    case storeUnavailable
    case internalFailure
}
