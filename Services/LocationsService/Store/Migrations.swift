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
            ]),
        Migration(
            version: 2, name: "pins per student",
            statements: [
                """
                -- What the running service was configured with, for the database's own rules to read: the cap
                -- on one student's pins (`pins_per_student`, PINS_PER_STUDENT), written at each start.
                CREATE TABLE locations.settings (
                    name   text PRIMARY KEY,
                    value  integer NOT NULL
                )
                """,
                """
                -- How many pins each student has in the read model, kept by `count_pins` as rows come and go,
                -- so the cap is checked without counting a student's pins.
                CREATE TABLE locations.pin_counts (
                    unique_key  text PRIMARY KEY,
                    pins        integer NOT NULL
                )
                """,
                """
                CREATE FUNCTION locations.count_pins() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    IF TG_OP = 'INSERT' THEN
                        INSERT INTO locations.pin_counts AS counted (unique_key, pins) VALUES (NEW.unique_key, 1)
                        ON CONFLICT (unique_key) DO UPDATE SET pins = counted.pins + 1;
                    ELSE
                        UPDATE locations.pin_counts SET pins = pins - 1 WHERE unique_key = OLD.unique_key;
                    END IF;
                    RETURN NULL;
                END
                $$
                """,
                """
                -- A student's pins past the cap, oldest first, leave the map as the new one arrives: for each, a
                -- `LocationDeleted` event in the log (the posting student as its actor, `"reason": "pinCap"` in its
                -- metadata) and its row gone, in the transaction of the post. Runs after `count_pins` (triggers run
                -- in the order of their names), whose update of the student's count holds later posts of that
                -- student, from any replica, until this one commits; each statement here reads what the one
                -- before it committed (a new snapshot per statement), so the cap holds exactly under parallel
                -- posts. The rows of one statement are inserted in the order of their students, so two batches
                -- wait for each other's students in one order and never deadlock.
                CREATE FUNCTION locations.keep_pins_per_student() RETURNS trigger LANGUAGE plpgsql AS $$
                DECLARE
                    cap integer;
                    held integer;
                    posted jsonb;
                    excess record;
                BEGIN
                    SELECT value INTO cap FROM locations.settings WHERE name = 'pins_per_student';
                    SELECT pins INTO held FROM locations.pin_counts WHERE unique_key = NEW.unique_key;
                    IF cap IS NULL OR held <= cap THEN
                        RETURN NULL;
                    END IF;
                    SELECT metadata INTO posted FROM locations.events WHERE stream_name = 'location-' || NEW.object_id AND stream_version = 1;
                    FOR excess IN
                        SELECT object_id, unique_key, version FROM locations.pins WHERE unique_key = NEW.unique_key
                        ORDER BY created_at, object_id LIMIT held - cap
                    LOOP
                        INSERT INTO locations.events
                            (stream_name, stream_version, event_type, schema_version, data, metadata, actor_key, idempotency_key)
                        VALUES (
                            'location-' || excess.object_id, excess.version + 1, 'LocationDeleted', 1,
                            jsonb_build_object(
                                'objectId', excess.object_id, 'uniqueKey', excess.unique_key,
                                'deletedAt', to_char(NEW.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')),
                            (coalesce(posted, '{}'::jsonb) - 'idempotencyKey' - 'requestHash') || '{"reason": "pinCap"}'::jsonb,
                            coalesce(posted->'actor'->>'key', NEW.unique_key), NULL);
                        DELETE FROM locations.pins WHERE object_id = excess.object_id;
                    END LOOP;
                    RETURN NULL;
                END
                $$
                """,
                "INSERT INTO locations.pin_counts (unique_key, pins) SELECT unique_key, count(*) FROM locations.pins GROUP BY unique_key",
                PinCap.triggers[0],
                PinCap.triggers[1],
                """
                -- The pins the cap took off, counted for /metrics without reading the whole log.
                CREATE INDEX events_pin_cap ON locations.events (position) WHERE metadata->>'reason' = 'pinCap'
                """,
            ]),
        Migration(
            version: 3, name: "pin versions: the map at any moment",
            statements: [
                """
                -- When an event's change took effect: the time the pin itself carries (what its clients see of
                -- it: `updatedAt`, `deletedAt`, `hiddenAt`), or for an unhide, whose pin keeps the times it had,
                -- when the log recorded it (to the millisecond, as the pins' times are).
                CREATE FUNCTION locations.event_moment(event_type text, data jsonb, recorded_at timestamptz)
                    RETURNS timestamptz LANGUAGE sql STABLE
                    RETURN CASE event_type
                        WHEN 'LocationDeleted' THEN (data->>'deletedAt')::timestamptz
                        WHEN 'LocationHidden' THEN (data->>'hiddenAt')::timestamptz
                        WHEN 'LocationUnhidden' THEN greatest((data->>'updatedAt')::timestamptz, date_trunc('milliseconds', recorded_at))
                        ELSE (data->>'updatedAt')::timestamptz
                    END
                """,
                """
                -- Every state each pin has had (the read model's columns), from the moment it took effect until the
                -- next event of its stream (NULL: still). The map at moment T is the rows with valid_from <= T <
                -- valid_until. Kept by `record_pin_versions` as events are appended, in the same statement.
                -- `updated_at` is never later than `valid_from`, so the newest pins at T are found by walking
                -- `pin_versions_newest_first` down from T.
                CREATE TABLE locations.pin_versions (
                    LIKE locations.pins,
                    valid_from  timestamptz NOT NULL,
                    valid_until timestamptz,
                    PRIMARY KEY (object_id, version)
                )
                """,
                """
                CREATE INDEX pin_versions_newest_first ON locations.pin_versions (updated_at DESC, object_id DESC)
                """,
                """
                CREATE INDEX pin_versions_by_owner ON locations.pin_versions (unique_key, updated_at DESC)
                """,
                """
                -- After each statement that appends events: each stream's open version ends at the moment of its
                -- first new event, and each new posted, updated or unhidden state is a version, until the moment
                -- of the next event of its stream if there is one already. That one may be of the same statement,
                -- or of a statement run inside it: the cap on pins per student deletes a student's oldest pin from
                -- a trigger on the read model, which fires before this one, so a pin posted and taken off by the cap
                -- in one group commit is closed here. Once per statement, so a group commit of many posts costs
                -- two statements and one index probe per post.
                CREATE FUNCTION locations.record_pin_versions() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    UPDATE locations.pin_versions AS open SET valid_until = greatest(first.moment, open.valid_from)
                    FROM (
                        SELECT DISTINCT ON (stream_name) substr(stream_name, 10) AS object_id,
                               locations.event_moment(event_type, data, recorded_at) AS moment
                        FROM appended ORDER BY stream_name, stream_version
                    ) AS first
                    WHERE open.object_id = first.object_id AND open.valid_until IS NULL;
                    INSERT INTO locations.pin_versions
                        (object_id, version, unique_key, first_name, last_name, map_string, media_url, latitude, longitude,
                         created_at, updated_at, valid_from, valid_until)
                    SELECT substr(added.stream_name, 10), added.stream_version, added.data->>'uniqueKey', added.data->>'firstName',
                           added.data->>'lastName', added.data->>'mapString', added.data->>'mediaURL', (added.data->>'latitude')::float8,
                           (added.data->>'longitude')::float8, (added.data->>'createdAt')::timestamptz,
                           (added.data->>'updatedAt')::timestamptz, moment,
                           CASE WHEN later.stream_version IS NOT NULL
                                THEN greatest(locations.event_moment(later.event_type, later.data, later.recorded_at), moment) END
                    FROM appended AS added
                    CROSS JOIN LATERAL locations.event_moment(added.event_type, added.data, added.recorded_at) AS moment
                    LEFT JOIN locations.events AS later
                        ON later.stream_name = added.stream_name AND later.stream_version = added.stream_version + 1
                    WHERE added.event_type IN ('LocationPosted', 'LocationUpdated', 'LocationUnhidden');
                    RETURN NULL;
                END
                $$
                """,
                """
                -- The versions of the log so far, as the trigger would have written them.
                INSERT INTO locations.pin_versions
                    (object_id, version, unique_key, first_name, last_name, map_string, media_url, latitude, longitude,
                     created_at, updated_at, valid_from, valid_until)
                SELECT object_id, stream_version, data->>'uniqueKey', data->>'firstName', data->>'lastName',
                       data->>'mapString', data->>'mediaURL', (data->>'latitude')::float8, (data->>'longitude')::float8,
                       (data->>'createdAt')::timestamptz, (data->>'updatedAt')::timestamptz, moment,
                       CASE WHEN until IS NOT NULL THEN greatest(until, moment) END
                FROM (
                    SELECT substr(stream_name, 10) AS object_id, stream_version, event_type, data,
                           locations.event_moment(event_type, data, recorded_at) AS moment,
                           lead(locations.event_moment(event_type, data, recorded_at))
                               OVER (PARTITION BY stream_name ORDER BY stream_version) AS until
                    FROM locations.events
                ) AS timed
                WHERE event_type IN ('LocationPosted', 'LocationUpdated', 'LocationUnhidden')
                """,
                """
                CREATE TRIGGER events_pin_versions AFTER INSERT ON locations.events
                    REFERENCING NEW TABLE AS appended
                    FOR EACH STATEMENT EXECUTE FUNCTION locations.record_pin_versions()
                """,
            ]),
        Migration(
            version: 4, name: "erasure of a student",
            statements: [
                """
                -- The log refuses every change but one: the rows `erase_student` deletes, in its own transaction.
                CREATE OR REPLACE FUNCTION locations.refuse_event_change() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    IF TG_OP = 'DELETE' AND current_setting('locations.erasing', true) = 'on' THEN
                        RETURN OLD;
                    END IF;
                    RAISE EXCEPTION 'locations.events is append-only (% refused)', TG_OP;
                END
                $$
                """,
                """
                -- Everything the log and its tables hold of one student (`student`: their account key), gone in
                -- one transaction: every event of each pin they ever posted, those pins' versions and rows, and
                -- their count. In each erased stream's place one event stays, a `LocationDeleted` with nothing of
                -- theirs (the pin's id, no owner, `at` as its time, `"reason": "erased"`), so that followers of the
                -- log (the live stream, a replay catching up, every replica's cache) take the pin off as they
                -- take off any deleted pin, and a late write to the pin meets its next version taken. Another
                -- student's stream is never touched: the owner of a pin is the only student in its events (an
                -- operator's hide or unhide names the operator). The student's row in `pin_counts` is locked
                -- first, so a post of theirs that commits meanwhile waits, and is then erased with the rest.
                -- Answers how many pins were erased; a second call finds none.
                CREATE FUNCTION locations.erase_student(student text, at timestamptz) RETURNS integer LANGUAGE plpgsql AS $$
                DECLARE
                    erased text[];
                BEGIN
                    PERFORM 1 FROM locations.pin_counts WHERE unique_key = student FOR UPDATE;
                    SELECT coalesce(array_agg(DISTINCT object_id), '{}') INTO erased
                    FROM locations.pin_versions WHERE unique_key = student;
                    PERFORM set_config('locations.erasing', 'on', true);
                    WITH gone AS (
                        DELETE FROM locations.events WHERE stream_name = ANY (SELECT 'location-' || unnest(erased))
                        RETURNING stream_name, stream_version
                    )
                    INSERT INTO locations.events
                        (stream_name, stream_version, event_type, schema_version, data, metadata, actor_key, idempotency_key)
                    SELECT stream_name, max(stream_version) + 1, 'LocationDeleted', 1,
                           jsonb_build_object(
                               'objectId', substr(stream_name, 10), 'uniqueKey', '',
                               'deletedAt', to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')),
                           '{"reason": "erased"}'::jsonb, '', NULL
                    FROM gone GROUP BY stream_name ORDER BY stream_name;
                    PERFORM set_config('locations.erasing', 'off', true);
                    DELETE FROM locations.pin_versions WHERE object_id = ANY (erased);
                    DELETE FROM locations.pins WHERE object_id = ANY (erased);
                    DELETE FROM locations.pin_counts WHERE unique_key = student;
                    RETURN cardinality(erased);
                END
                $$
                """,
            ]),
        Migration(
            version: 5, name: "a hidden pin is hidden at every moment",
            statements: [
                """
                -- The pins an operator has hidden and not brought back (their stream's last event is a
                -- `LocationHidden`). While a pin is here no read shows it: not the map at any past moment, not the
                -- log to a follower (its posts, updates and unhides are withheld; its removals are not). An unhide
                -- takes it out, and every read it left shows it again at every moment it was on the map.
                CREATE TABLE locations.hidden_pins (
                    object_id  text PRIMARY KEY
                )
                """,
                """
                -- After each statement that appends events: a stream whose newest hide, unhide or deletion in it is
                -- a hide joins the hidden pins; an unhide or a deletion (the one an erasure leaves) takes it out. A
                -- hidden pin is in no read model row, so nothing else can follow its hide: posts and updates, most
                -- of what is appended, are passed over.
                CREATE FUNCTION locations.record_hidden_pins() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    WITH newest AS (
                        SELECT DISTINCT ON (stream_name) substr(stream_name, 10) AS object_id, event_type
                        FROM appended WHERE event_type IN ('LocationHidden', 'LocationUnhidden', 'LocationDeleted')
                        ORDER BY stream_name, stream_version DESC
                    ), shown AS (
                        DELETE FROM locations.hidden_pins AS hidden USING newest
                        WHERE hidden.object_id = newest.object_id AND newest.event_type <> 'LocationHidden'
                    )
                    INSERT INTO locations.hidden_pins (object_id)
                    SELECT object_id FROM newest WHERE event_type = 'LocationHidden';
                    RETURN NULL;
                END
                $$
                """,
                """
                -- The pins hidden so far, as the trigger would have recorded them: each hide that is its stream's
                -- last event.
                INSERT INTO locations.hidden_pins (object_id)
                SELECT substr(stream_name, 10) FROM locations.events AS hide
                WHERE event_type = 'LocationHidden' AND NOT EXISTS (
                    SELECT FROM locations.events AS later
                    WHERE later.stream_name = hide.stream_name AND later.stream_version > hide.stream_version)
                """,
                """
                CREATE TRIGGER events_hidden_pins AFTER INSERT ON locations.events
                    REFERENCING NEW TABLE AS appended
                    FOR EACH STATEMENT EXECUTE FUNCTION locations.record_hidden_pins()
                """,
            ]),
        Migration(version: 6, name: "maps: many maps, each pin on one", statements: MapMigration.statements),
        Migration(
            version: 7, name: "a post is never its own cap's",
            statements: [
                """
                -- As migration 6's, but the pin just posted is never among those the cap takes off: two posts of
                -- one student in the same millisecond have the same `created_at`, and the tie went by object id,
                -- so the post just acknowledged could be the one deleted.
                CREATE OR REPLACE FUNCTION locations.keep_pins_per_student() RETURNS trigger LANGUAGE plpgsql AS $$
                DECLARE
                    cap integer;
                    held integer;
                    posted jsonb;
                    excess record;
                BEGIN
                    SELECT coalesce(
                        (SELECT pins_per_student FROM locations.maps WHERE slug = NEW.map),
                        (SELECT value FROM locations.settings WHERE name = 'pins_per_student')) INTO cap;
                    SELECT pins INTO held FROM locations.pin_counts WHERE map = NEW.map AND unique_key = NEW.unique_key;
                    IF cap IS NULL OR held <= cap THEN
                        RETURN NULL;
                    END IF;
                    SELECT metadata INTO posted FROM locations.events WHERE stream_name = 'location-' || NEW.object_id AND stream_version = 1;
                    FOR excess IN
                        SELECT object_id, unique_key, version FROM locations.pins
                        WHERE map = NEW.map AND unique_key = NEW.unique_key AND object_id <> NEW.object_id
                        ORDER BY created_at, object_id LIMIT held - cap
                    LOOP
                        INSERT INTO locations.events
                            (stream_name, stream_version, event_type, schema_version, data, metadata, actor_key, idempotency_key, map)
                        VALUES (
                            'location-' || excess.object_id, excess.version + 1, 'LocationDeleted', 1,
                            jsonb_build_object(
                                'objectId', excess.object_id, 'uniqueKey', excess.unique_key,
                                'deletedAt', to_char(NEW.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')),
                            (coalesce(posted, '{}'::jsonb) - 'idempotencyKey' - 'requestHash') || '{"reason": "pinCap"}'::jsonb,
                            coalesce(posted->'actor'->>'key', NEW.unique_key), NULL, NEW.map);
                        DELETE FROM locations.pins WHERE object_id = excess.object_id;
                    END LOOP;
                    RETURN NULL;
                END
                $$
                """
            ]),
        Migration(version: 8, name: "erasure reaches the class maps", statements: MapErasureMigration.statements),
    ]

    /// The tables an erasure deletes rows from (`Compact` rewrites them).
    static let erasedTables = [
        "locations.events", "locations.pins", "locations.pin_versions", "locations.pin_counts", "locations.map_members", "locations.map_invites",
        "locations.map_removals", "locations.maps",
    ]

    static func migrator(_ client: PostgresClient, logger: Logger) -> Migrator {
        Migrator(client: client, logger: logger, schema: schema, migrations: all)
    }
}

/// The cap on one student's pins on the map (`PINS_PER_STUDENT`), kept by `locations.keep_pins_per_student`.
enum PinCap {
    static let defaultPinsPerStudent = 3

    /// On the read model's table: the count of each student's pins, and the cap, checked on new pins
    /// (version 1: a post; a pin back on the map at a later version was posted within the cap). A replay
    /// that swaps in a rebuilt table puts them on that one (and counts its pins again: `recount`).
    static let triggers = [
        """
        CREATE TRIGGER pins_count AFTER INSERT OR DELETE ON locations.pins
            FOR EACH ROW EXECUTE FUNCTION locations.count_pins()
        """,
        """
        CREATE TRIGGER pins_per_student AFTER INSERT ON locations.pins
            FOR EACH ROW WHEN (NEW.version = 1) EXECUTE FUNCTION locations.keep_pins_per_student()
        """,
    ]

    /// The counts made anew from the read model's table, as one table written whole and then indexed (a
    /// replay swaps them in with the table they count, while appends wait).
    static let recount = [
        "DROP TABLE locations.pin_counts",
        """
        CREATE TABLE locations.pin_counts AS
            SELECT unique_key, count(*)::integer AS pins, map FROM locations.pins GROUP BY map, unique_key
        """,
        "ALTER TABLE locations.pin_counts ADD PRIMARY KEY (map, unique_key), ALTER COLUMN pins SET NOT NULL",
    ]

    /// Tells the database the cap this service was started with (every replica of a deployment has the same).
    static func configure(_ pinsPerStudent: Int, on client: PostgresClient, logger: Logger) async throws {
        try await client.query(
            """
            INSERT INTO locations.settings (name, value) VALUES ('pins_per_student', \(pinsPerStudent))
            ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value
            """, logger: logger)
    }
}
