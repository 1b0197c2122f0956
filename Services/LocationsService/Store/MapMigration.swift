/// Migration 6: many maps in one log. Every event and every pin carries its map (`''` is the default map,
/// today's, so every row written before is on it); a map's own life (created, settings, members, roles,
/// invites, deleted) is events in its stream `map-{slug}`, projected into `locations.maps`,
/// `locations.map_members`, `locations.map_invites` and `locations.map_removals` by one function,
/// `locations.apply_map_event`, which both the append's trigger and a replay (`locations.rebuild_maps`) run.
enum MapMigration {
    static let statements = [
        """
        -- The map of each event: '' for the default map and for everything written before there were maps;
        -- a class map's slug for its pins' events and for its own life's (stream `map-{slug}`).
        ALTER TABLE locations.events ADD COLUMN map text NOT NULL DEFAULT ''
        """,
        """
        -- A class map's followers read its events alone, in commit order.
        CREATE INDEX events_by_map ON locations.events (map, transaction_id, position) WHERE map <> ''
        """,
        "ALTER TABLE locations.pins ADD COLUMN map text NOT NULL DEFAULT ''",
        "DROP INDEX locations.pins_newest_first",
        "CREATE INDEX pins_newest_first ON locations.pins (map, updated_at DESC, object_id DESC)",
        "ALTER TABLE locations.pin_versions ADD COLUMN map text NOT NULL DEFAULT ''",
        "DROP INDEX locations.pin_versions_newest_first",
        "CREATE INDEX pin_versions_newest_first ON locations.pin_versions (map, updated_at DESC, object_id DESC)",
        "ALTER TABLE locations.pin_counts ADD COLUMN map text NOT NULL DEFAULT ''",
        "ALTER TABLE locations.pin_counts DROP CONSTRAINT pin_counts_pkey, ADD PRIMARY KEY (map, unique_key)",
        """
        -- The maps. `pins_per_student` NULL: the deployment's cap (`locations.settings`). A deleted map keeps
        -- its row (`deleted_at`), so its slug is never given to another.
        CREATE TABLE locations.maps (
            slug              text PRIMARY KEY,
            name              text NOT NULL,
            read              text NOT NULL CHECK (read IN ('public', 'members')),
            post              text NOT NULL CHECK (post IN ('members', 'signedIn')),
            pins_per_student  integer,
            approval          boolean NOT NULL,
            created_at        timestamptz NOT NULL,
            deleted_at        timestamptz,
            version           integer NOT NULL
        )
        """,
        """
        CREATE TABLE locations.map_members (
            map          text NOT NULL,
            account_key  text NOT NULL,
            first_name   text NOT NULL,
            last_name    text NOT NULL,
            role         text NOT NULL CHECK (role IN ('owner', 'moderator', 'member', 'pending')),
            joined_at    timestamptz NOT NULL,
            PRIMARY KEY (map, account_key)
        )
        """,
        "CREATE INDEX map_members_by_account ON locations.map_members (account_key)",
        """
        CREATE TABLE locations.map_invites (
            code        text PRIMARY KEY,
            map         text NOT NULL,
            created_by  text NOT NULL,
            created_at  timestamptz NOT NULL,
            expires_at  timestamptz,
            uses        integer,
            used        integer NOT NULL DEFAULT 0,
            revoked_at  timestamptz
        )
        """,
        "CREATE INDEX map_invites_by_map ON locations.map_invites (map, created_at DESC)",
        """
        -- Who was removed from a map, and when: an invite made before cannot bring them back.
        CREATE TABLE locations.map_removals (
            map          text NOT NULL,
            account_key  text NOT NULL,
            removed_at   timestamptz NOT NULL,
            PRIMARY KEY (map, account_key)
        )
        """,
        """
        -- The one rule of how a map's events fold into its read models. Each event carries its moment (`at`).
        CREATE FUNCTION locations.apply_map_event(event locations.events) RETURNS void LANGUAGE plpgsql AS $$
        DECLARE
            map_slug text := substr(event.stream_name, 5);
            moment timestamptz := (event.data->>'at')::timestamptz;
            member text := event.data->>'key';
        BEGIN
            CASE event.event_type
            WHEN 'MapCreated' THEN
                INSERT INTO locations.maps (slug, name, read, post, pins_per_student, approval, created_at, version)
                VALUES (map_slug, event.data->>'name', event.data->>'read', event.data->>'post',
                        (event.data->>'pinsPerStudent')::integer, (event.data->>'approval')::boolean, moment, event.stream_version);
                INSERT INTO locations.map_members (map, account_key, first_name, last_name, role, joined_at)
                VALUES (map_slug, event.data->'owner'->>'key', event.data->'owner'->>'firstName',
                        event.data->'owner'->>'lastName', 'owner', moment);
            WHEN 'MapSettingsChanged' THEN
                UPDATE locations.maps SET
                    name = coalesce(event.data->>'name', name),
                    read = coalesce(event.data->>'read', read),
                    post = coalesce(event.data->>'post', post),
                    pins_per_student = CASE WHEN event.data ? 'pinsPerStudent'
                                            THEN (event.data->>'pinsPerStudent')::integer ELSE pins_per_student END,
                    approval = coalesce((event.data->>'approval')::boolean, approval)
                WHERE slug = map_slug;
            WHEN 'MemberJoined' THEN
                INSERT INTO locations.map_members AS joined (map, account_key, first_name, last_name, role, joined_at)
                VALUES (map_slug, member, event.data->>'firstName', event.data->>'lastName', event.data->>'role', moment)
                ON CONFLICT (map, account_key) DO UPDATE
                SET first_name = EXCLUDED.first_name, last_name = EXCLUDED.last_name, role = EXCLUDED.role;
                UPDATE locations.map_invites SET used = used + 1 WHERE code = event.data->>'invite' AND map = map_slug;
            WHEN 'MemberLeft', 'MemberRemoved' THEN
                DELETE FROM locations.map_members WHERE map = map_slug AND account_key = member;
                IF event.event_type = 'MemberRemoved' THEN
                    INSERT INTO locations.map_removals (map, account_key, removed_at) VALUES (map_slug, member, moment)
                    ON CONFLICT (map, account_key) DO UPDATE SET removed_at = EXCLUDED.removed_at;
                END IF;
            WHEN 'RoleGranted' THEN
                IF event.data->>'role' = 'owner' THEN
                    UPDATE locations.map_members SET role = 'moderator' WHERE map = map_slug AND role = 'owner';
                END IF;
                UPDATE locations.map_members SET role = event.data->>'role' WHERE map = map_slug AND account_key = member;
            WHEN 'RoleRevoked' THEN
                UPDATE locations.map_members SET role = 'member'
                WHERE map = map_slug AND account_key = member AND role = event.data->>'role';
            WHEN 'InviteCreated' THEN
                INSERT INTO locations.map_invites (code, map, created_by, created_at, expires_at, uses)
                VALUES (event.data->>'code', map_slug, event.actor_key, moment, (event.data->>'expiresAt')::timestamptz,
                        (event.data->>'uses')::integer);
            WHEN 'InviteRevoked' THEN
                UPDATE locations.map_invites SET revoked_at = moment WHERE code = event.data->>'code' AND map = map_slug;
            WHEN 'MapDeleted' THEN
                INSERT INTO locations.maps (slug, name, read, post, approval, created_at, deleted_at, version)
                VALUES (map_slug, '', 'members', 'members', false, moment, moment, event.stream_version)
                ON CONFLICT (slug) DO UPDATE SET deleted_at = EXCLUDED.deleted_at, name = '';
                DELETE FROM locations.map_members WHERE map = map_slug;
                DELETE FROM locations.map_invites WHERE map = map_slug;
                DELETE FROM locations.map_removals WHERE map = map_slug;
            ELSE
                RAISE EXCEPTION 'unknown map event %', event.event_type;
            END CASE;
            UPDATE locations.maps SET version = event.stream_version WHERE slug = map_slug;
        END
        $$
        """,
        """
        CREATE FUNCTION locations.project_map_event() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            PERFORM locations.apply_map_event(NEW);
            RETURN NULL;
        END
        $$
        """,
        """
        -- In the statement that appends a map's event, as a pin's read model row is written in its append's.
        CREATE TRIGGER events_maps AFTER INSERT ON locations.events
            FOR EACH ROW WHEN (NEW.stream_name LIKE 'map-%') EXECUTE FUNCTION locations.project_map_event()
        """,
        """
        -- The maps' read models made anew from the log, stream by stream in version order (a map's events
        -- touch no other map's rows). Answers how many events were applied. `replay` runs it, and `replay
        -- --verify` runs it in a transaction it rolls back after comparing.
        CREATE FUNCTION locations.rebuild_maps() RETURNS integer LANGUAGE plpgsql AS $$
        DECLARE
            event locations.events;
            applied integer := 0;
        BEGIN
            DELETE FROM locations.map_members;
            DELETE FROM locations.map_invites;
            DELETE FROM locations.map_removals;
            DELETE FROM locations.maps;
            FOR event IN SELECT * FROM locations.events WHERE stream_name LIKE 'map-%' ORDER BY stream_name, stream_version LOOP
                PERFORM locations.apply_map_event(event);
                applied := applied + 1;
            END LOOP;
            RETURN applied;
        END
        $$
        """,
        """
        CREATE OR REPLACE FUNCTION locations.count_pins() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_OP = 'INSERT' THEN
                INSERT INTO locations.pin_counts AS counted (map, unique_key, pins) VALUES (NEW.map, NEW.unique_key, 1)
                ON CONFLICT (map, unique_key) DO UPDATE SET pins = counted.pins + 1;
            ELSE
                UPDATE locations.pin_counts SET pins = pins - 1 WHERE map = OLD.map AND unique_key = OLD.unique_key;
            END IF;
            RETURN NULL;
        END
        $$
        """,
        """
        -- The cap per map: the map's own (`locations.maps.pins_per_student`), else the deployment's. Otherwise
        -- as migration 2 says.
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
                SELECT object_id, unique_key, version FROM locations.pins WHERE map = NEW.map AND unique_key = NEW.unique_key
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
        """,
        """
        -- As migration 3's, with each version's map, and only over pins' streams.
        CREATE OR REPLACE FUNCTION locations.record_pin_versions() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            UPDATE locations.pin_versions AS open SET valid_until = greatest(first.moment, open.valid_from)
            FROM (
                SELECT DISTINCT ON (stream_name) substr(stream_name, 10) AS object_id,
                       locations.event_moment(event_type, data, recorded_at) AS moment
                FROM appended WHERE stream_name LIKE 'location-%' ORDER BY stream_name, stream_version
            ) AS first
            WHERE open.object_id = first.object_id AND open.valid_until IS NULL;
            INSERT INTO locations.pin_versions
                (object_id, version, unique_key, first_name, last_name, map_string, media_url, latitude, longitude,
                 created_at, updated_at, valid_from, valid_until, map)
            SELECT substr(added.stream_name, 10), added.stream_version, added.data->>'uniqueKey', added.data->>'firstName',
                   added.data->>'lastName', added.data->>'mapString', added.data->>'mediaURL', (added.data->>'latitude')::float8,
                   (added.data->>'longitude')::float8, (added.data->>'createdAt')::timestamptz,
                   (added.data->>'updatedAt')::timestamptz, moment,
                   CASE WHEN later.stream_version IS NOT NULL
                        THEN greatest(locations.event_moment(later.event_type, later.data, later.recorded_at), moment) END,
                   added.map
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
        -- As migration 4's, each erased stream's last event on the stream's map.
        CREATE OR REPLACE FUNCTION locations.erase_student(student text, at timestamptz) RETURNS integer LANGUAGE plpgsql AS $$
        DECLARE
            erased text[];
        BEGIN
            PERFORM 1 FROM locations.pin_counts WHERE unique_key = student FOR UPDATE;
            SELECT coalesce(array_agg(DISTINCT object_id), '{}') INTO erased
            FROM locations.pin_versions WHERE unique_key = student;
            PERFORM set_config('locations.erasing', 'on', true);
            WITH gone AS (
                DELETE FROM locations.events WHERE stream_name = ANY (SELECT 'location-' || unnest(erased))
                RETURNING stream_name, stream_version, map
            )
            INSERT INTO locations.events
                (stream_name, stream_version, event_type, schema_version, data, metadata, actor_key, idempotency_key, map)
            SELECT stream_name, max(stream_version) + 1, 'LocationDeleted', 1,
                   jsonb_build_object(
                       'objectId', substr(stream_name, 10), 'uniqueKey', '',
                       'deletedAt', to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')),
                   '{"reason": "erased"}'::jsonb, '', NULL, max(map)
            FROM gone GROUP BY stream_name ORDER BY stream_name;
            PERFORM set_config('locations.erasing', 'off', true);
            DELETE FROM locations.pin_versions WHERE object_id = ANY (erased);
            DELETE FROM locations.pins WHERE object_id = ANY (erased);
            DELETE FROM locations.pin_counts WHERE unique_key = student;
            RETURN cardinality(erased);
        END
        $$
        """,
        """
        -- A class map deleted, as a student is erased: every event of every pin ever on it and of the map's own
        -- life, gone in one transaction; in each pin stream's place one `LocationDeleted` with nothing of its
        -- owner (`"reason": "mapDeleted"`), and in the map's a `MapDeleted` (the slug stays taken). The map's
        -- pin counts are locked first, so a post on it that commits meanwhile waits and is deleted with the
        -- rest. Answers how many pins were deleted; NULL when there is no such map (or it is deleted already).
        CREATE FUNCTION locations.delete_map(map_slug text, at timestamptz, actor text, metadata jsonb) RETURNS integer
        LANGUAGE plpgsql AS $$
        DECLARE
            erased text[];
            last_version integer;
            moment text := to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"');
        BEGIN
            SELECT version INTO last_version FROM locations.maps WHERE slug = map_slug AND deleted_at IS NULL FOR UPDATE;
            IF last_version IS NULL THEN
                RETURN NULL;
            END IF;
            PERFORM 1 FROM locations.pin_counts WHERE map = map_slug FOR UPDATE;
            SELECT coalesce(array_agg(DISTINCT object_id), '{}') INTO erased FROM locations.pin_versions WHERE map = map_slug;
            PERFORM set_config('locations.erasing', 'on', true);
            WITH gone AS (
                DELETE FROM locations.events WHERE stream_name = ANY (SELECT 'location-' || unnest(erased))
                RETURNING stream_name, stream_version
            )
            INSERT INTO locations.events
                (stream_name, stream_version, event_type, schema_version, data, metadata, actor_key, idempotency_key, map)
            SELECT stream_name, max(stream_version) + 1, 'LocationDeleted', 1,
                   jsonb_build_object('objectId', substr(stream_name, 10), 'uniqueKey', '', 'deletedAt', moment),
                   '{"reason": "mapDeleted"}'::jsonb, '', NULL, map_slug
            FROM gone GROUP BY stream_name ORDER BY stream_name;
            DELETE FROM locations.events WHERE stream_name = 'map-' || map_slug;
            PERFORM set_config('locations.erasing', 'off', true);
            INSERT INTO locations.events
                (stream_name, stream_version, event_type, schema_version, data, metadata, actor_key, idempotency_key, map)
            VALUES ('map-' || map_slug, last_version + 1, 'MapDeleted', 1, jsonb_build_object('at', moment), metadata, actor, NULL, map_slug);
            DELETE FROM locations.pin_versions WHERE object_id = ANY (erased);
            DELETE FROM locations.pins WHERE map = map_slug;
            DELETE FROM locations.pin_counts WHERE map = map_slug;
            DELETE FROM locations.hidden_pins WHERE object_id = ANY (erased);
            RETURN cardinality(erased);
        END
        $$
        """,
    ]
}
