-- The limit for replay: PostgreSQL alone rebuilding the read model from the same log in one statement.
-- The latest event of every stream in the followers' order (transaction id, then position); streams
-- whose latest event is LocationDeleted have no pin. Columns are read from the events' JSON exactly as
-- the service's replay reads them.
CREATE TABLE bench.sql_pins (LIKE locations.pins INCLUDING DEFAULTS);

INSERT INTO bench.sql_pins
    (object_id, unique_key, first_name, last_name, map_string, media_url, latitude, longitude,
     created_at, updated_at, version)
SELECT data->>'objectId', data->>'uniqueKey', data->>'firstName', data->>'lastName', data->>'mapString',
       data->>'mediaURL', (data->>'latitude')::float8, (data->>'longitude')::float8,
       (data->>'createdAt')::timestamptz, (data->>'updatedAt')::timestamptz, stream_version
FROM (
    SELECT DISTINCT ON (stream_name) stream_name, stream_version, event_type, data
    FROM locations.events
    ORDER BY stream_name, transaction_id DESC, position DESC
) AS latest
WHERE event_type <> 'LocationDeleted';
