import OnTheMapShared
import PostgresNIO
import ServiceKit

/// Who can log in: local accounts with their password hashes, and copies of what other identity providers
/// said. `PostgresAccountStore` is the gateway's; the tests' `MemoryAccountStore` (module
/// `ServiceTwins`) holds the same in memory, for router-level tests of what is decided above the store.
protocol AccountStore: Sendable {
    /// A new local account; `AccountStoreError.emailTaken` when a local account has this address's key.
    func createLocal(email: EmailAddress, passwordHash: String, firstName: String, lastName: String) async throws -> Account
    /// A local account by its address's key (`EmailAddress.key`), with its password hash.
    func local(emailKey: String) async throws -> (account: Account, passwordHash: String)?
    func account(key: String) async throws -> Account?
    /// Records what another provider told us about an account at login: adds it, or updates its names and
    /// address. Its groups stay as they are (none for a new account): only an OpenID Connect sign-in names them.
    func upsertExternal(_ account: Account) async throws
    /// The account an OpenID Connect issuer's subject (or a Facebook user) signs in to, created at the first
    /// sign-in (with a new key), its names, address and groups set to the ones given.
    func signedIn(_ identity: ExternalIdentity) async throws -> Account
    /// Disables the account with this address's key (a local account's, else one an identity provider named),
    /// recording who did it and why: it can no longer log in, and every session it has ends on every replica.
    func disable(emailKey: String, by operatorName: String, reason: String?) async throws -> AccountSwitch
    /// Lets a disabled account log in again; the sessions its disabling ended stay ended.
    func enable(emailKey: String) async throws -> AccountSwitch
    /// An erasure's start, recorded: the account can no longer log in and every session it has ends on every
    /// replica, until `finishErasure` (which a gateway that stopped half-way calls when it runs again).
    func beginErasure(key: String) async throws
    /// An erasure's end, once the account's pins are erased: the account and everything kept of it go.
    func finishErasure(key: String) async throws
    /// The keys of the accounts whose erasure began and has not finished.
    func pendingErasures() async throws -> [String]
}

enum AccountStoreError: Error {
    case emailTaken
    /// The sign-in's statement returned no account (it always does; this would be a fault of ours).
    case signInNotRecorded
}

/// Who an OpenID Connect issuer (or Facebook's Graph API) says signed in: its subject (stable for the person
/// at that issuer) and the claims of the ID token (or the profile) the gateway copies.
struct ExternalIdentity: Sendable, Equatable {
    /// What a new account's `provider` says: `oidc`, `facebook`.
    var provider: String
    var issuer: String
    var subject: String
    var email: String
    var firstName: String
    var lastName: String
    /// The groups the ID token names (`OIDCGroups`), replacing the account's; none from Facebook.
    var groups: [String] = []
}

/// What an operator's disable or enable found.
enum AccountSwitch: Equatable, Sendable {
    /// Done, to this account.
    case done(Account)
    /// The account was disabled (or enabled) already.
    case already(Account)
    case noAccount
}

/// `auth.accounts`.
struct PostgresAccountStore: AccountStore {
    let database: Database

    static let columns = "key, provider, email, first_name, last_name, groups"

    func createLocal(email: EmailAddress, passwordHash: String, firstName: String, lastName: String) async throws -> Account {
        let account = Account(key: Account.newKey(), provider: "local", email: email.text, firstName: firstName, lastName: lastName)
        do {
            _ = try await database.write(
                """
                INSERT INTO auth.accounts (key, provider, email, email_key, password_hash, first_name, last_name)
                VALUES (\(account.key), 'local', \(email.text), \(email.key), \(passwordHash), \(firstName), \(lastName))
                """)
        } catch let error as PSQLError where error.serverInfo?[.sqlState] == "23505" {
            throw AccountStoreError.emailTaken
        }
        return account
    }

    func local(emailKey: String) async throws -> (account: Account, passwordHash: String)? {
        let rows = try await database.query(
            """
            SELECT \(unescaped: Self.columns), password_hash FROM auth.accounts
            WHERE provider = 'local' AND email_key = \(emailKey)
            """)
        guard let row = rows.first else { return nil }
        let (key, provider, email, first, last, groups, hash) = try row.decode((String, String, String, String, String, [String], String).self)
        return (Account(key: key, provider: provider, email: email, firstName: first, lastName: last, groups: groups), hash)
    }

    func account(key: String) async throws -> Account? {
        guard !key.contains("\u{0}") else { return nil }
        let rows = try await database.query("SELECT \(unescaped: Self.columns) FROM auth.accounts WHERE key = \(key)")
        return try rows.first.map(Self.account(from:))
    }

    /// When this adds or changes the account, every replica is told to look its sessions up again (see
    /// `SessionCache`); a login that changes nothing announces nothing, since each announcement makes every
    /// replica scan its cache.
    func upsertExternal(_ account: Account) async throws {
        _ = try await database.write(
            """
            WITH upserted AS (
                INSERT INTO auth.accounts (key, provider, email, first_name, last_name)
                VALUES (\(account.key), \(account.provider), \(account.email), \(account.firstName), \(account.lastName))
                ON CONFLICT (key) DO UPDATE SET email = EXCLUDED.email, first_name = EXCLUDED.first_name,
                                                last_name = EXCLUDED.last_name
                WHERE (accounts.email, accounts.first_name, accounts.last_name)
                      IS DISTINCT FROM (EXCLUDED.email, EXCLUDED.first_name, EXCLUDED.last_name)
                RETURNING key
            )
            SELECT pg_notify(\(SessionCache.channel), \(SessionCache.accountPrefix) || key) FROM upserted
            """)
    }

    /// One statement finds the identity's account or creates both, and copies the names and groups; two first sign-ins
    /// at once (or a new key taken already) make one fail on a unique key, and it is tried again, then finds
    /// the other's account. A change is announced as `upsertExternal`'s are.
    func signedIn(_ identity: ExternalIdentity) async throws -> Account {
        var attempt = 0
        while true {
            attempt += 1
            do {
                let rows = try await database.write(
                    """
                    WITH existing AS (
                        SELECT account_key FROM auth.oidc_identities WHERE issuer = \(identity.issuer) AND subject = \(identity.subject)
                    ), created AS (
                        INSERT INTO auth.accounts (key, provider, email, first_name, last_name, groups)
                        SELECT \(Account.newKey()), \(identity.provider), \(identity.email), \(identity.firstName), \(identity.lastName),
                               \(identity.groups)::text[]
                        WHERE NOT EXISTS (SELECT 1 FROM existing)
                        RETURNING key
                    ), linked AS (
                        INSERT INTO auth.oidc_identities (issuer, subject, account_key)
                        SELECT \(identity.issuer), \(identity.subject), key FROM created
                        RETURNING account_key
                    ), updated AS (
                        UPDATE auth.accounts
                        SET email = \(identity.email), first_name = \(identity.firstName), last_name = \(identity.lastName),
                            groups = \(identity.groups)::text[]
                        WHERE key = (SELECT account_key FROM existing)
                          AND (email, first_name, last_name, groups)
                              IS DISTINCT FROM (\(identity.email), \(identity.firstName), \(identity.lastName), \(identity.groups)::text[])
                        RETURNING key
                    ), announced AS (
                        SELECT pg_notify(\(SessionCache.channel), \(SessionCache.accountPrefix) || key) FROM updated
                    )
                    SELECT coalesce((SELECT account_key FROM existing), (SELECT account_key FROM linked)), (SELECT count(*) FROM announced)
                    """)
                guard let row = rows.first else { throw AccountStoreError.signInNotRecorded }
                let (key, _) = try row.decode((String, Int64).self)
                return Account(
                    key: key, provider: identity.provider, email: identity.email, firstName: identity.firstName, lastName: identity.lastName,
                    groups: identity.groups)
            } catch let error as PSQLError where error.serverInfo?[.sqlState] == "23505" && attempt < 3 {
                continue
            }
        }
    }

    /// Disabling and the end of the account's sessions commit together. The account's row is locked first and
    /// the sessions are ended by the statement after, whose snapshot holds any session a login opened before
    /// the lock (a login locks the row too while it opens one: see `PostgresSessionStore.create`).
    func disable(emailKey: String, by operatorName: String, reason: String?) async throws -> AccountSwitch {
        try await switchAccount(emailKey: emailKey, toDisabled: true) { connection, key in
            try await connection.query(
                """
                UPDATE auth.accounts SET disabled_at = now(), disabled_by = \(operatorName), disabled_reason = \(reason)
                WHERE key = \(key)
                """, logger: database.logger)
            try await connection.query(
                """
                WITH ended AS (
                    UPDATE auth.sessions SET revoked_at = now() WHERE account_key = \(key) AND revoked_at IS NULL
                )
                SELECT pg_notify(\(SessionCache.channel), \(SessionCache.accountPrefix) || \(key))
                """, logger: database.logger)
        }
    }

    func enable(emailKey: String) async throws -> AccountSwitch {
        try await switchAccount(emailKey: emailKey, toDisabled: false) { connection, key in
            try await connection.query(
                """
                UPDATE auth.accounts SET disabled_at = NULL, disabled_by = NULL, disabled_reason = NULL WHERE key = \(key)
                """, logger: database.logger)
        }
    }

    /// As a disabling ends sessions (its row locked, then its sessions ended by the statement after), but
    /// by the account's key, and recorded in `auth.erasures` in the same transaction.
    func beginErasure(key: String) async throws {
        try await database.client.withTransaction(logger: database.logger) { connection in
            try await connection.query(
                "INSERT INTO auth.erasures (account_key) VALUES (\(key)) ON CONFLICT (account_key) DO NOTHING", logger: database.logger)
            try await connection.query(
                """
                UPDATE auth.accounts
                SET disabled_at = coalesce(disabled_at, now()), disabled_by = coalesce(disabled_by, 'erasure'),
                    disabled_reason = coalesce(disabled_reason, 'the student asked to be erased')
                WHERE key = \(key)
                """, logger: database.logger)
            try await connection.query(
                """
                WITH ended AS (
                    UPDATE auth.sessions SET revoked_at = now() WHERE account_key = \(key) AND revoked_at IS NULL
                )
                SELECT pg_notify(\(SessionCache.channel), \(SessionCache.accountPrefix) || \(key))
                """, logger: database.logger)
        }
    }

    func finishErasure(key: String) async throws {
        _ = try await database.write("SELECT auth.erase_account(\(key))")
    }

    func pendingErasures() async throws -> [String] {
        try await database.query("SELECT account_key FROM auth.erasures ORDER BY requested_at").map { try $0.decode(String.self) }
    }

    /// Finds the account by its address's key and locks it; changes it (in the same transaction) unless it is
    /// in that state already. An identity provider's accounts have no key stored: theirs is worked out as
    /// migration 2 worked out the local ones'.
    private func switchAccount(
        emailKey: String, toDisabled: Bool, _ change: (PostgresConnection, String) async throws -> Void
    ) async throws -> AccountSwitch {
        try await database.client.withTransaction(logger: database.logger) { connection in
            let rows = try await connection.query(
                """
                SELECT \(unescaped: Self.columns), disabled_at IS NOT NULL FROM auth.accounts
                WHERE email_key = \(emailKey) OR (email_key IS NULL AND normalize(lower(btrim(email)), NFC) = \(emailKey))
                ORDER BY provider = 'local' DESC, created_at LIMIT 1
                FOR UPDATE
                """, logger: database.logger
            ).collect()
            guard let row = rows.first else { return .noAccount }
            let (key, provider, email, first, last, groups, disabled) = try row.decode((String, String, String, String, String, [String], Bool).self)
            let account = Account(key: key, provider: provider, email: email, firstName: first, lastName: last, groups: groups)
            guard disabled != toDisabled else { return .already(account) }
            try await change(connection, key)
            return .done(account)
        }
    }

    static func account(from row: PostgresRow) throws -> Account {
        let (key, provider, email, first, last, groups) = try row.decode((String, String, String, String, String, [String]).self)
        return Account(key: key, provider: provider, email: email, firstName: first, lastName: last, groups: groups)
    }
}
