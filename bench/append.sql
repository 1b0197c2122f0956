-- pgbench script: the transaction of one POST /v1/StudentLocation, as the service runs it for a post
-- that arrives alone, with the same tables, indexes, triggers, value shapes and sizes: one LocationPosted
-- event plus one read-model row, in one statement and one round trip. (Posts that arrive together, the
-- service commits together: EventStore.appendPosted takes many pins in the same statement.) Run with
-- -M extended, so values travel as bound parameters as they do from the service.
-- :r is a fresh 63-bit random number per transaction: its hex form is the objectId, so ids stay unique.
\set r random(1, 9223372036854775806)
WITH appended AS (
    INSERT INTO locations.events
        (stream_name, stream_version, event_type, schema_version, data, metadata, actor_key, idempotency_key)
    VALUES ('location-' || to_hex(:r::bigint), 1, 'LocationPosted', 1,
            ('{"objectId":"' || to_hex(:r::bigint) || '","uniqueKey":"bench-' || :client_id
             || '","firstName":"Ada","lastName":"Lovelace","mapString":"Mountain View, CA","mediaURL":"https://udacity.com",'
             || '"latitude":37.386052,"longitude":-122.083851,"createdAt":"2024-05-01T12:00:00.000Z","updatedAt":"2024-05-01T12:00:00.000Z"}')::jsonb,
            ('{"actor":{"key":"bench-' || :client_id || '","firstName":"Ada","lastName":"Lovelace"}}')::jsonb,
            'bench-' || :client_id, NULL)
    RETURNING transaction_id, position
), projected AS (
    INSERT INTO locations.pins (object_id, unique_key, first_name, last_name, map_string, media_url,
                                latitude, longitude, created_at, updated_at, version)
    VALUES (to_hex(:r::bigint), 'bench-' || :client_id, 'Ada', 'Lovelace', 'Mountain View, CA', 'https://udacity.com',
            37.386052, -122.083851, now(), now(), 1)
)
SELECT transaction_id::text::bigint, position FROM appended;
