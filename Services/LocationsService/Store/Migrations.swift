import Logging
import PostgresNIO
import ServiceKit

/// The schema `locations`, as numbered migrations. Each one runs once, in order, in its own transaction;
/// the migrator records what ran in `locations.schema_migrations`. Never edit a migration that has shipped:
/// add the next one.
enum Migrations {
    static let schema = "locations"

    static let all: [Migration] = [
        Migration(
            version: 1, name: "event log, read model, checkpoints",
            statements: [
                """
                -- The event log. Append-only: a trigger refuses UPDATE, DELETE and TRUNCATE.
                -- `position` is unique but is NOT the reading order: a transaction may take a position and
                -- commit after a later one. Followers read in (transaction_id, position) order, and only below
                -- pg_snapshot_xmin(pg_current_snapshot()), where no transaction can still commit.
                CREATE TABLE locations.events (
                    position        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                    transaction_id  xid8 NOT NULL DEFAULT pg_current_xact_id(),
                    stream_name     text NOT NULL,
                    stream_version  integer NOT NULL CHECK (stream_version >= 1),
                    event_type      text NOT NULL,
                    schema_version  integer NOT NULL,
                    data            jsonb NOT NULL,
                    metadata        jsonb NOT NULL,
                    actor_key       text NOT NULL,
                    idempotency_key text,
                    recorded_at     timestamptz NOT NULL DEFAULT now(),
                    CONSTRAINT events_stream_version_unique UNIQUE (stream_name, stream_version)
                )
                """,
                """
                CREATE UNIQUE INDEX events_idempotency_unique ON locations.events (actor_key, idempotency_key)
                    WHERE idempotency_key IS NOT NULL
                """,
                """
                CREATE INDEX events_commit_order ON locations.events (transaction_id, position)
                """,
                """
                CREATE FUNCTION locations.refuse_event_change() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    RAISE EXCEPTION 'locations.events is append-only (% refused)', TG_OP;
                END
                $$
                """,
                """
                CREATE TRIGGER events_append_only BEFORE UPDATE OR DELETE ON locations.events
                    FOR EACH ROW EXECUTE FUNCTION locations.refuse_event_change()
                """,
                """
                CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON locations.events
                    FOR EACH STATEMENT EXECUTE FUNCTION locations.refuse_event_change()
                """,
                """
                -- The read model: the current state of every pin, written in the same statement as the event
                -- that changed it. `version` is the stream version of the last event applied to the row.
                CREATE TABLE locations.pins (
                    object_id   text PRIMARY KEY,
                    unique_key  text NOT NULL,
                    first_name  text NOT NULL,
                    last_name   text NOT NULL,
                    map_string  text NOT NULL,
                    media_url   text NOT NULL,
                    latitude    double precision NOT NULL,
                    longitude   double precision NOT NULL,
                    created_at  timestamptz NOT NULL,
                    updated_at  timestamptz NOT NULL,
                    version     integer NOT NULL
                )
                """,
                """
                CREATE INDEX pins_newest_first ON locations.pins (updated_at DESC, object_id DESC)
                """,
                """
                CREATE INDEX pins_by_owner ON locations.pins (unique_key, updated_at DESC)
                """,
                """
                -- How far a rebuild of a projection has read the log, in the followers' order.
                CREATE TABLE locations.projection_checkpoints (
                    projection      text PRIMARY KEY,
                    transaction_id  xid8 NOT NULL,
                    position        bigint NOT NULL,
                    recorded_at     timestamptz NOT NULL DEFAULT now()
                )
                """,
            ])
    ]

    static func migrator(_ client: PostgresClient, logger: Logger) -> Migrator {
        Migrator(client: client, logger: logger, schema: schema, migrations: all)
    }
}
