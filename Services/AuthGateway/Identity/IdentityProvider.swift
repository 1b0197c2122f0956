/// Who vouches for a username and password. `IDENTITY_PROVIDER` picks one at start-up.
protocol IdentityProvider: Sendable {
    /// The account these credentials belong to.
    func authenticate(username: EmailAddress, password: String) async throws(LoginError) -> Account
    /// Whether accounts can be created here (`POST /v1/accounts`).
    var allowsSignUp: Bool { get }
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
