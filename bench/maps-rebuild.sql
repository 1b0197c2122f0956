-- The limit for replay over a log of many maps: PostgreSQL alone rebuilding the same read models from the log,
-- one statement each. The pins as bench/rebuild.sql rebuilds them, each with its map, hidden pins left out
-- as deleted ones; the maps and their owners from the maps' streams (this log's maps have one event each,
-- MapCreated, which is all the fold of locations.apply_map_event has to apply to it).
CREATE TABLE bench.sql_pins (LIKE locations.pins INCLUDING DEFAULTS);

INSERT INTO bench.sql_pins
    (object_id, unique_key, first_name, last_name, map_string, media_url, latitude, longitude,
     created_at, updated_at, version, map)
SELECT data->>'objectId', data->>'uniqueKey', data->>'firstName', data->>'lastName', data->>'mapString',
       data->>'mediaURL', (data->>'latitude')::float8, (data->>'longitude')::float8,
       (data->>'createdAt')::timestamptz, (data->>'updatedAt')::timestamptz, stream_version, map
FROM (
    SELECT DISTINCT ON (stream_name) stream_name, stream_version, event_type, data, map
    FROM locations.events
    WHERE stream_name LIKE 'location-%'
    ORDER BY stream_name, transaction_id DESC, position DESC
) AS latest
WHERE event_type NOT IN ('LocationDeleted', 'LocationHidden');

CREATE TABLE bench.sql_maps (LIKE locations.maps INCLUDING DEFAULTS);
CREATE TABLE bench.sql_map_members (LIKE locations.map_members INCLUDING DEFAULTS);

WITH created AS (
    SELECT stream_version, data, (data->>'at')::timestamptz AS at
    FROM locations.events
    WHERE stream_name LIKE 'map-%' AND event_type = 'MapCreated'
), maps AS (
    INSERT INTO bench.sql_maps (slug, name, read, post, pins_per_student, approval, created_at, version)
    SELECT data->>'slug', data->>'name', data->>'read', data->>'post', (data->>'pinsPerStudent')::integer,
           (data->>'approval')::boolean, at, stream_version
    FROM created
)
INSERT INTO bench.sql_map_members (map, account_key, first_name, last_name, role, joined_at)
SELECT data->>'slug', data->'owner'->>'key', data->'owner'->>'firstName', data->'owner'->>'lastName', 'owner', at
FROM created;
