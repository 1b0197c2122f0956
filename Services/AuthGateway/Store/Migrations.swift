import Logging
import PostgresNIO
import ServiceKit

/// The schema `auth`, as numbered migrations. Never edit one that has shipped: add the next.
enum Migrations {
    static let schema = "auth"

    static let all: [Migration] = [
        Migration(version: 1, name: "accounts, sessions, login attempts", statements: [
            """
            -- Accounts of every identity provider. Local ones carry a bcrypt hash; others are copies of
            -- what the provider told us at the last login, kept so sessions and profiles can name them.
            CREATE TABLE auth.accounts (
                key            text PRIMARY KEY,
                provider       text NOT NULL,
                email          text NOT NULL,
                password_hash  text,
                first_name     text NOT NULL,
                last_name      text NOT NULL,
                created_at     timestamptz NOT NULL DEFAULT now()
            )
            """,
            """
            CREATE UNIQUE INDEX accounts_local_email_unique ON auth.accounts (lower(email)) WHERE provider = 'local'
            """,
            """
            -- Only a SHA-256 of each session token is stored: a leaked table opens no session.
            CREATE TABLE auth.sessions (
                token_hash   bytea PRIMARY KEY,
                account_key  text NOT NULL REFERENCES auth.accounts (key),
                created_at   timestamptz NOT NULL DEFAULT now(),
                expires_at   timestamptz NOT NULL,
                revoked_at   timestamptz
            )
            """,
            """
            CREATE INDEX sessions_by_account ON auth.sessions (account_key)
            """,
            """
            -- Failed logins, by account and by client address, for throttling.
            CREATE TABLE auth.login_failures (
                subject       text NOT NULL,
                failed_at     timestamptz NOT NULL DEFAULT now()
            )
            """,
            """
            CREATE INDEX login_failures_recent ON auth.login_failures (subject, failed_at DESC)
            """,
        ]),
    ]

    static func migrator(_ client: PostgresClient, logger: Logger) -> Migrator {
        Migrator(client: client, logger: logger, schema: schema, migrations: all)
    }
}
