import Logging
import ServiceKit

/// The apps' Facebook logins (`facebook_mobile`) checked by the gateway itself with Facebook's Graph API;
/// every other credential goes to `others`, the `IDENTITY_PROVIDER`'s. A Facebook user's account is found or
/// created as an OpenID Connect subject's is (`auth.oidc_identities`), under Facebook's issuer.
struct FacebookIdentityProvider: IdentityProvider {
    let graph: FacebookGraph
    let others: any IdentityProvider
    let accounts: any AccountStore
    let logger: Logger

    /// The issuer Facebook's own ID tokens name: its user ids are scoped to the app, as Graph's are.
    static let issuer = "https://www.facebook.com"

    var allowsSignUp: Bool { others.allowsSignUp }
    var acceptsFacebook: Bool { true }

    func authenticate(_ credential: Credential) async throws(LoginError) -> Account {
        guard case .facebook(let token) = credential else { return try await others.authenticate(credential) }
        let person = try await graph.person(holding: token)
        let account: Account
        do {
            account = try await accounts.signedIn(
                ExternalIdentity(
                    provider: "facebook", issuer: Self.issuer, subject: person.id, email: person.email, firstName: person.firstName,
                    lastName: person.lastName))
        } catch  where Database.isOutage(error) {
            throw .storeUnavailable
        } catch {
            logger.error("could not record the Facebook account", metadata: ["error": "\(String(reflecting: error))"])
            throw .internalFailure
        }
        logger.info("logged in with Facebook", metadata: ["account": "\(account.key)"])
        return account
    }
}
