/// Migration 8: an erasure reaches the class maps. A student is named, beside their own pins, in the lives of
/// the maps they were on (`MapCreated` of a map they made, `MemberJoined`, `MemberLeft`, `MemberRemoved`,
/// `RoleGranted`, `RoleRevoked` about them) and as the author of what they did there (every map event, and a
/// moderator's hides, unhides and removals on other students' pins). Those events are other people's history
/// too, so they are not deleted: `erase_student` rewrites them in place, the student's key and names made
/// empty and the request's traces (id, user agent, body hash) dropped, and the maps' read models lose their
/// rows (membership, removal, an invite's author). A map they owned passes to its longest-standing moderator,
/// else its longest-standing member, as a `RoleGranted` in its log. The folding of a map's events treats the
/// empty key as nobody, so a replay rebuilds the same read models.
enum MapErasureMigration {
    static let statements = [
        """
        -- The log refuses every change but an erasure's, in its own transaction: the rows it deletes, and the
        -- author and subject it empties in others' events (nothing else of a row may change).
        CREATE OR REPLACE FUNCTION locations.refuse_event_change() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF current_setting('locations.erasing', true) = 'on' THEN
                IF TG_OP = 'DELETE' THEN
                    RETURN OLD;
                END IF;
                IF TG_OP = 'UPDATE'
                   AND to_jsonb(NEW) - 'data' - 'metadata' - 'actor_key' = to_jsonb(OLD) - 'data' - 'metadata' - 'actor_key' THEN
                    RETURN NEW;
                END IF;
            END IF;
            RAISE EXCEPTION 'locations.events is append-only (% refused)', TG_OP;
        END
        $$
        """,
        """
        -- Whom a map's event is about: an erasure finds a student's without reading the whole log.
        CREATE INDEX events_map_subjects ON locations.events ((coalesce(data->>'key', data->'owner'->>'key')))
            WHERE stream_name LIKE 'map-%'
        """,
        """
        -- Who acted on a map or on another student's pin (a moderator's hide, unhide or removal).
        CREATE INDEX events_acts_on_others ON locations.events (actor_key)
            WHERE stream_name LIKE 'map-%' OR event_type IN ('LocationHidden', 'LocationUnhidden', 'LocationDeleted')
        """,
        "ALTER FUNCTION locations.apply_map_event(locations.events) RENAME TO apply_map_event_as_written",
        """
        -- A map's event folds as migration 6 says, but the empty key an erasure leaves is nobody: no member, no
        -- removal (a `RoleGranted` of ownership to nobody still takes it from the owner of that moment).
        CREATE FUNCTION locations.apply_map_event(event locations.events) RETURNS void LANGUAGE plpgsql AS $$
        BEGIN
            PERFORM locations.apply_map_event_as_written(event);
            IF coalesce(event.data->>'key', event.data->'owner'->>'key') = '' THEN
                DELETE FROM locations.map_members WHERE map = substr(event.stream_name, 5) AND account_key = '';
                DELETE FROM locations.map_removals WHERE map = substr(event.stream_name, 5) AND account_key = '';
            END IF;
        END
        $$
        """,
        "ALTER FUNCTION locations.erase_student(text, timestamptz) RENAME TO erase_students_pins",
        """
        -- The student's class maps' ownership handed on, migration 6's erasure of their pins, and then their
        -- name and key out of every event that names them and their rows out of the maps' read models.
        CREATE FUNCTION locations.erase_student(student text, at timestamptz) RETURNS integer LANGUAGE plpgsql AS $$
        DECLARE
            erased integer;
            moment text := to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"');
            nobody jsonb := '{"key": "", "firstName": "", "lastName": ""}';
            owned record;
            successor text;
        BEGIN
            -- The map's row is locked first, so a change to the map meanwhile is either before (and its version
            -- read here) or after (and meets this one's version taken).
            FOR owned IN
                SELECT maps.slug, maps.version FROM locations.maps
                JOIN locations.map_members AS member ON member.map = maps.slug
                WHERE member.account_key = student AND member.role = 'owner' AND maps.deleted_at IS NULL
                ORDER BY maps.slug
                FOR UPDATE OF maps
            LOOP
                successor := NULL;
                SELECT account_key INTO successor FROM locations.map_members
                WHERE map = owned.slug AND account_key <> student AND role IN ('moderator', 'member')
                ORDER BY role = 'moderator' DESC, joined_at, account_key
                LIMIT 1;
                IF successor IS NOT NULL THEN
                    INSERT INTO locations.events
                        (stream_name, stream_version, event_type, schema_version, data, metadata, actor_key, idempotency_key, map)
                    VALUES ('map-' || owned.slug, owned.version + 1, 'RoleGranted', 1,
                            jsonb_build_object('key', successor, 'role', 'owner', 'at', moment),
                            jsonb_build_object('actor', nobody, 'reason', 'erased'), '', NULL, owned.slug);
                END IF;
            END LOOP;
            erased := locations.erase_students_pins(student, at);
            PERFORM set_config('locations.erasing', 'on', true);
            UPDATE locations.events SET
                data = CASE
                    WHEN stream_name NOT LIKE 'map-%' THEN data
                    WHEN data->'owner'->>'key' = student THEN jsonb_set(data, '{owner}', nobody)
                    WHEN data->>'key' = student AND data ? 'firstName' THEN data || nobody
                    WHEN data->>'key' = student THEN data || '{"key": ""}'::jsonb
                    ELSE data
                END,
                metadata = CASE
                    WHEN actor_key = student OR metadata->'actor'->>'key' = student
                    THEN metadata - 'requestId' - 'userAgent' - 'requestHash' - 'idempotencyKey' || jsonb_build_object('actor', nobody)
                    ELSE metadata
                END,
                actor_key = CASE WHEN actor_key = student THEN '' ELSE actor_key END
            WHERE (stream_name LIKE 'map-%' AND coalesce(data->>'key', data->'owner'->>'key') = student)
               OR ((stream_name LIKE 'map-%' OR event_type IN ('LocationHidden', 'LocationUnhidden', 'LocationDeleted'))
                   AND actor_key = student);
            PERFORM set_config('locations.erasing', 'off', true);
            DELETE FROM locations.map_members WHERE account_key = student;
            DELETE FROM locations.map_removals WHERE account_key = student;
            UPDATE locations.map_invites SET created_by = '' WHERE created_by = student;
            RETURN erased;
        END
        $$
        """,
    ]
}
