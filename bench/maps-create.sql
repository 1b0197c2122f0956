-- Creates :maps public class maps (class-00000, class-00001, ...) as the service does: one MapCreated event
-- each, in its stream map-{slug}, on its map; the append's trigger (locations.apply_map_event) projects each
-- into locations.maps and its owner into locations.map_members, in the same statement.
-- Also bench.map_of(i): the map of pin i in bench/maps-pins.sql and bench/maps-spread.sql, so that pins
-- interleave across maps in the log as a real one's do: pin i is on map i % (:maps + 1), the last of those
-- being the default map ('').
-- Usage: psql -v maps=10000 -f bench/maps-create.sql

CREATE SCHEMA IF NOT EXISTS bench;

CREATE FUNCTION bench.map_slug(m int) RETURNS text IMMUTABLE LANGUAGE sql
    RETURN 'class-' || lpad(m::text, 5, '0');

-- The number of class maps, fixed when this file runs.
SELECT format('CREATE FUNCTION bench.maps() RETURNS int IMMUTABLE LANGUAGE sql RETURN %s', :maps) \gexec

CREATE FUNCTION bench.map_of(i bigint) RETURNS text IMMUTABLE LANGUAGE sql
    RETURN CASE WHEN i % (bench.maps() + 1) = bench.maps() THEN '' ELSE bench.map_slug((i % (bench.maps() + 1))::int) END;

INSERT INTO locations.events
    (stream_name, stream_version, event_type, schema_version, data, metadata, actor_key, idempotency_key, map, recorded_at)
SELECT 'map-' || slug, 1, 'MapCreated', 1,
       jsonb_build_object(
           'slug', slug, 'name', 'Class ' || m, 'read', 'public', 'post', 'members', 'approval', false,
           'owner', jsonb_build_object('key', 'teacher-' || m, 'firstName', 'Teacher', 'lastName', 'Number ' || m),
           'at', to_char(created_at, 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')),
       jsonb_build_object(
           'actor', jsonb_build_object('key', 'teacher-' || m, 'firstName', 'Teacher', 'lastName', 'Number ' || m),
           'userAgent', 'OnTheMap/1.0'),
       'teacher-' || m, NULL, slug, created_at AT TIME ZONE 'UTC'
FROM generate_series(0, :maps - 1) AS m
CROSS JOIN LATERAL (SELECT bench.map_slug(m) AS slug,
                           timestamp '2023-12-01 00:00:00' + m * interval '1 second' AS created_at) AS map
ORDER BY m;
