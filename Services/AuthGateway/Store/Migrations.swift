import Logging
import PostgresNIO
import ServiceKit

/// The schema `auth`, as numbered migrations. Never edit one that has shipped: add the next.
enum Migrations {
    static let schema = "auth"

    static let all: [Migration] = [
        Migration(
            version: 1, name: "accounts, sessions, login attempts",
            statements: [
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
        Migration(
            version: 2, name: "one key per email address, attempts counted before they are checked",
            statements: [
                """
                -- The address as the gateway normalises it (`EmailAddress.key`): sign-up writes it and login looks
                -- it up, so the database never normalises an address a second, different way.
                ALTER TABLE auth.accounts ADD COLUMN email_key text
                """,
                """
                -- Existing local accounts, keyed the way the gateway keys them: lowercased, composed form.
                UPDATE auth.accounts SET email_key = normalize(lower(btrim(email)), NFC) WHERE provider = 'local'
                """,
                """
                ALTER TABLE auth.accounts ADD CONSTRAINT accounts_local_have_email_key CHECK (provider <> 'local' OR email_key IS NOT NULL)
                """,
                """
                DROP INDEX auth.accounts_local_email_unique
                """,
                """
                CREATE UNIQUE INDEX accounts_local_email_key_unique ON auth.accounts (email_key) WHERE provider = 'local'
                """,
                """
                -- Which login attempt a row belongs to: it is counted as a failure before its password is checked,
                -- and removed again if the password was right.
                ALTER TABLE auth.login_failures ADD COLUMN attempt uuid
                """,
                """
                -- Counts one attempt against each subject (an account, a client address), unless one of them has
                -- reached its limit inside the window; answers the seconds to wait then, else NULL. Checking and
                -- counting are one step, serialised per subject, so attempts sent in parallel cannot all be
                -- checked before any of them is counted. Each subject is always counted with the same window.
                CREATE FUNCTION auth.count_attempt(attempt_subjects text[], attempt_limits bigint[], window_seconds bigint, attempt_id uuid)
                RETURNS integer LANGUAGE plpgsql AS $$
                DECLARE
                    lock_key bigint;
                    moment timestamptz;
                    seconds_to_wait integer;
                BEGIN
                    -- Locks taken in one order, so two attempts sharing subjects never deadlock.
                    FOR lock_key IN SELECT DISTINCT hashtextextended(s, 0) FROM unnest(attempt_subjects) AS s ORDER BY 1 LOOP
                        PERFORM pg_advisory_xact_lock(lock_key);
                    END LOOP;
                    moment := clock_timestamp();
                    -- Attempts that have aged out count for nothing: they go, so the table holds one window's worth.
                    DELETE FROM auth.login_failures
                    WHERE subject = ANY (attempt_subjects) AND failed_at <= moment - make_interval(secs => window_seconds);
                    -- Blocked while `cap` attempts lie inside the window: until the cap-th newest ages out.
                    SELECT max(greatest(1, ceil(extract(epoch FROM counted.failed_at + make_interval(secs => window_seconds) - moment))))::integer
                    INTO seconds_to_wait
                    FROM unnest(attempt_subjects, attempt_limits) AS limited (subject, cap)
                    CROSS JOIN LATERAL (
                        SELECT failure.failed_at FROM auth.login_failures AS failure
                        WHERE failure.subject = limited.subject
                        ORDER BY failure.failed_at DESC OFFSET limited.cap - 1 LIMIT 1
                    ) AS counted;
                    IF seconds_to_wait IS NOT NULL THEN
                        RETURN seconds_to_wait;
                    END IF;
                    INSERT INTO auth.login_failures (subject, failed_at, attempt) SELECT unnest(attempt_subjects), moment, attempt_id;
                    RETURN NULL;
                END
                $$
                """,
            ]),
        Migration(
            version: 3, name: "an attempt counted at the gateway's time",
            statements: [
                """
                -- As count_attempt of migration 2, at the time of day the gateway gives (its clock, which its tests
                -- move on instead of waiting out a window) rather than the database's.
                CREATE FUNCTION auth.count_attempt(
                    attempt_subjects text[], attempt_limits bigint[], window_seconds bigint, attempt_id uuid, moment timestamptz
                )
                RETURNS integer LANGUAGE plpgsql AS $$
                DECLARE
                    lock_key bigint;
                    seconds_to_wait integer;
                BEGIN
                    -- Locks taken in one order, so two attempts sharing subjects never deadlock.
                    FOR lock_key IN SELECT DISTINCT hashtextextended(s, 0) FROM unnest(attempt_subjects) AS s ORDER BY 1 LOOP
                        PERFORM pg_advisory_xact_lock(lock_key);
                    END LOOP;
                    -- Attempts that have aged out count for nothing: they go, so the table holds one window's worth.
                    DELETE FROM auth.login_failures
                    WHERE subject = ANY (attempt_subjects) AND failed_at <= moment - make_interval(secs => window_seconds);
                    -- Blocked while `cap` attempts lie inside the window: until the cap-th newest ages out.
                    SELECT max(greatest(1, ceil(extract(epoch FROM counted.failed_at + make_interval(secs => window_seconds) - moment))))::integer
                    INTO seconds_to_wait
                    FROM unnest(attempt_subjects, attempt_limits) AS limited (subject, cap)
                    CROSS JOIN LATERAL (
                        SELECT failure.failed_at FROM auth.login_failures AS failure
                        WHERE failure.subject = limited.subject
                        ORDER BY failure.failed_at DESC OFFSET limited.cap - 1 LIMIT 1
                    ) AS counted;
                    IF seconds_to_wait IS NOT NULL THEN
                        RETURN seconds_to_wait;
                    END IF;
                    INSERT INTO auth.login_failures (subject, failed_at, attempt) SELECT unnest(attempt_subjects), moment, attempt_id;
                    RETURN NULL;
                END
                $$
                """,
                """
                -- The form of migration 2, for a replica of the previous version still running during an upgrade.
                CREATE OR REPLACE FUNCTION auth.count_attempt(attempt_subjects text[], attempt_limits bigint[], window_seconds bigint, attempt_id uuid)
                RETURNS integer LANGUAGE sql AS $$
                    SELECT auth.count_attempt(attempt_subjects, attempt_limits, window_seconds, attempt_id, clock_timestamp())
                $$
                """,
            ]),
        // Version 4 is left to the write limits, made on another line of work; the migrator applies each
        // version it has not recorded, whatever order they come in.
        Migration(
            version: 5, name: "accounts an operator disabled",
            statements: [
                """
                -- An account an operator disabled (`auth-gateway accounts disable`): when, by whom and why. While
                -- disabled_at is set it cannot log in and no session of it is live; enabling clears all three.
                ALTER TABLE auth.accounts
                    ADD COLUMN disabled_at timestamptz,
                    ADD COLUMN disabled_by text,
                    ADD COLUMN disabled_reason text
                """
            ]),
    ]

    static func migrator(_ client: PostgresClient, logger: Logger) -> Migrator {
        Migrator(client: client, logger: logger, schema: schema, migrations: all)
    }
}
