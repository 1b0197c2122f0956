-- pgbench script for `bench/run.py at`: the limit `?at=` is held to, one SQL query over the log for the same
-- list at a moment drawn as bench/at.lua draws it (:first and :last, seconds since 1970, given with -D): the
-- last event of every stream up to that moment (DISTINCT ON), the pins they leave on the map, newest 100.
\set moment random(:first * 1000, :last * 1000)
SELECT object_id, unique_key, first_name, last_name, map_string, media_url, latitude, longitude, created_at, updated_at
FROM (
    SELECT DISTINCT ON (stream_name) substr(stream_name, 10) AS object_id, event_type,
           data->>'uniqueKey' AS unique_key, data->>'firstName' AS first_name, data->>'lastName' AS last_name,
           data->>'mapString' AS map_string, data->>'mediaURL' AS media_url, (data->>'latitude')::float8 AS latitude,
           (data->>'longitude')::float8 AS longitude, (data->>'createdAt')::timestamptz AS created_at,
           (data->>'updatedAt')::timestamptz AS updated_at
    FROM locations.events
    WHERE recorded_at <= to_timestamp(:moment / 1000.0)
    ORDER BY stream_name, stream_version DESC
) AS latest
WHERE event_type IN ('LocationPosted', 'LocationUpdated', 'LocationUnhidden')
ORDER BY updated_at DESC, object_id DESC
LIMIT 100;
