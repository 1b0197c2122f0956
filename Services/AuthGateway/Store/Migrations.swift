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
        Migration(
            version: 4, name: "write allowances",
            statements: [
                """
                -- How soon each subject (an account, a client address) may write again, as a token bucket held
                -- as one time (the generic cell rate algorithm): a write is let through while `next_at` is at most
                -- `burst - 1` intervals ahead of now, and moves it on by one interval. A subject whose `next_at`
                -- has passed has its whole burst, the same as one with no row. Unlogged: no write waits for a WAL
                -- flush for it, and a crash of the database forgets the allowances, so every student starts again
                -- with a whole burst, never with less.
                CREATE UNLOGGED TABLE auth.write_allowances (
                    subject  text PRIMARY KEY,
                    next_at  timestamptz NOT NULL
                )
                """,
                """
                -- Decides a batch of writes in order, each with its subjects: `request_subjects[i]` belongs to write
                -- `request_numbers[i]`, has a burst of `subject_bursts[i]` writes, then one per
                -- `subject_intervals_ms[i]`, and the write asks for up to `request_wants[i]` (the same for each of
                -- its subjects): one, or more that its replica keeps for the next writes of the same subjects (a
                -- lease). Answers, for each write number in ascending order, the writes granted (at least 1, as
                -- many as every subject has left up to what was asked, and counted against each), or minus the
                -- seconds until one would be. Advisory locks taken in one order per subject make batches from
                -- every replica decide in turn.
                CREATE FUNCTION auth.take_writes(
                    request_subjects text[], request_numbers integer[], subject_bursts integer[], subject_intervals_ms bigint[],
                    request_wants integer[], moment timestamptz
                )
                RETURNS integer[] LANGUAGE plpgsql AS $$
                DECLARE
                    lock_key bigint;
                    request integer;
                    granted integer;
                    wait integer;
                    answers integer[] := '{}';
                BEGIN
                    FOR lock_key IN SELECT DISTINCT hashtextextended(s, 0) FROM unnest(request_subjects) AS s ORDER BY 1 LOOP
                        PERFORM pg_advisory_xact_lock(lock_key);
                    END LOOP;
                    -- Now and then, the rows of subjects that have their whole burst again go: they mean nothing.
                    IF random() < 0.01 THEN
                        DELETE FROM auth.write_allowances WHERE next_at < moment;
                    END IF;
                    FOR request IN SELECT DISTINCT unnest(request_numbers) ORDER BY 1 LOOP
                        -- `owed`: how far ahead of now the subject's time is, in milliseconds (0 with no row).
                        SELECT least(min(asked.want), min(floor(((asked.burst - 1) * asked.interval_ms - owed.ms) / asked.interval_ms) + 1))::integer,
                               max(ceil((owed.ms - (asked.burst - 1) * asked.interval_ms) / 1000.0))::integer
                        INTO granted, wait
                        FROM unnest(request_subjects, request_numbers, subject_bursts, subject_intervals_ms, request_wants)
                                AS asked (subject, number, burst, interval_ms, want)
                        LEFT JOIN auth.write_allowances AS allowance ON allowance.subject = asked.subject
                        CROSS JOIN LATERAL (
                            SELECT greatest(coalesce(extract(epoch FROM allowance.next_at - moment) * 1000, 0), 0) AS ms
                        ) AS owed
                        WHERE asked.number = request;
                        IF granted >= 1 THEN
                            INSERT INTO auth.write_allowances AS allowance (subject, next_at)
                            SELECT asked.subject, moment + make_interval(secs => granted * asked.interval_ms / 1000.0)
                            FROM unnest(request_subjects, request_numbers, subject_intervals_ms) AS asked (subject, number, interval_ms)
                            WHERE asked.number = request
                            ON CONFLICT (subject) DO UPDATE
                                SET next_at = greatest(allowance.next_at, moment) + (excluded.next_at - moment);
                            answers := answers || granted;
                        ELSE
                            answers := answers || -greatest(wait, 1);
                        END IF;
                    END LOOP;
                    RETURN answers;
                END
                $$
                """,
            ]),
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
        Migration(
            version: 6, name: "erasures",
            statements: [
                """
                -- Students who asked to be erased, until everything of theirs is gone (their pins in the log, then
                -- their account here): a gateway that stops half-way finishes it when it runs again. Only the key.
                CREATE TABLE auth.erasures (
                    account_key   text PRIMARY KEY,
                    requested_at  timestamptz NOT NULL DEFAULT now()
                )
                """,
                """
                -- Everything kept here of one account, gone in one transaction: its sessions, its failed logins,
                -- its write allowance, the account itself, and its erasure's record.
                CREATE FUNCTION auth.erase_account(erased text) RETURNS void LANGUAGE sql
                BEGIN ATOMIC
                    DELETE FROM auth.sessions WHERE account_key = erased;
                    DELETE FROM auth.login_failures WHERE subject IN (
                        SELECT 'account:' || coalesce(email_key, normalize(lower(btrim(email)), NFC)) FROM auth.accounts WHERE key = erased);
                    DELETE FROM auth.write_allowances WHERE subject = 'account:' || erased;
                    DELETE FROM auth.accounts WHERE key = erased;
                    DELETE FROM auth.erasures WHERE account_key = erased;
                END
                """,
            ]),
        Migration(
            version: 7, name: "OpenID Connect sign-ins",
            statements: [
                """
                -- Which account an OpenID Connect issuer's subject signs in to: the first sign-in creates the
                -- account, and the provider's names and address are copied to it at each one after.
                CREATE TABLE auth.oidc_identities (
                    issuer       text NOT NULL,
                    subject      text NOT NULL,
                    account_key  text NOT NULL REFERENCES auth.accounts (key) ON DELETE CASCADE,
                    PRIMARY KEY (issuer, subject)
                )
                """,
                """
                CREATE INDEX oidc_identities_by_account ON auth.oidc_identities (account_key)
                """,
                """
                -- Sign-ins sent to the provider and not yet back, by a SHA-256 of their state: taken (deleted) when
                -- the browser returns, so each is finished at most once, on whichever replica it returns to.
                -- A sign-in from the command line names where the browser is sent back to and the challenge of
                -- the code the command will show for its session.
                CREATE TABLE auth.oidc_sign_ins (
                    state_hash     bytea PRIMARY KEY,
                    nonce          text NOT NULL,
                    code_verifier  text NOT NULL,
                    cli_redirect   text,
                    cli_challenge  text,
                    expires_at     timestamptz NOT NULL
                )
                """,
                """
                -- A finished sign-in from the command line, waiting for the command to show its code and the
                -- verifier of its challenge: then it becomes a session. Only a SHA-256 of the code is stored.
                CREATE TABLE auth.oidc_handoffs (
                    code_hash    bytea PRIMARY KEY,
                    account_key  text NOT NULL REFERENCES auth.accounts (key) ON DELETE CASCADE,
                    challenge    text NOT NULL,
                    expires_at   timestamptz NOT NULL
                )
                """,
            ]),
        Migration(
            version: 8, name: "write allowances per map",
            statements: [
                """
                -- A student's writes are counted on each map apart (`account:{key}@{slug}` on a class map): an
                -- erasure deletes every one of them.
                CREATE OR REPLACE FUNCTION auth.erase_account(erased text) RETURNS void LANGUAGE sql
                BEGIN ATOMIC
                    DELETE FROM auth.sessions WHERE account_key = erased;
                    DELETE FROM auth.login_failures WHERE subject IN (
                        SELECT 'account:' || coalesce(email_key, normalize(lower(btrim(email)), NFC)) FROM auth.accounts WHERE key = erased);
                    DELETE FROM auth.write_allowances
                    WHERE subject = 'account:' || erased OR starts_with(subject, 'account:' || erased || '@');
                    DELETE FROM auth.accounts WHERE key = erased;
                    DELETE FROM auth.erasures WHERE account_key = erased;
                END
                """
            ]),
        Migration(
            version: 9, name: "OpenID Connect groups",
            statements: [
                """
                -- The groups the OpenID Connect provider put the person in (the ID token's claim that
                -- OIDC_GROUPS_CLAIM names), replaced at each sign-in; MAP_CREATORS's group:NAME reads them.
                -- Other providers' accounts have none. They live in the account's row alone, so an erasure
                -- (auth.erase_account) deletes them with it.
                ALTER TABLE auth.accounts ADD COLUMN groups text[] NOT NULL DEFAULT '{}'
                """
            ]),
    ]

    /// The tables an erasure deletes rows from (`Compact` rewrites them).
    static let erasedTables = [
        "auth.accounts", "auth.sessions", "auth.login_failures", "auth.write_allowances", "auth.erasures", "auth.oidc_identities",
        "auth.oidc_handoffs",
    ]

    static func migrator(_ client: PostgresClient, logger: Logger) -> Migrator {
        Migrator(client: client, logger: logger, schema: schema, migrations: all)
    }
}
