-- Fills locations.events with a synthetic history in exactly the shape the service appends:
--   pin i (0 <= i < :pins) has 1 + 2 * (i % 4) events (1, 3, 5 or 7; 4 on average, so 4 × :pins events):
--   version 1 is LocationPosted, later versions are LocationUpdated, and for one pin in ten (i % 10 = 3,
--   always a pin with 3 or 7 events) the last event is LocationDeleted instead.
-- Events are written round by round (every pin's version 1, then every version 2, ...) in blocks of pins,
-- one transaction per block (:blocks blocks per round, so 7 × :blocks INSERT statements), so streams
-- interleave in the log and transaction ids vary as they do in a real one.
-- Usage: psql -v pins=250000 -v blocks=10 -f bench/generate-events.sql

CREATE SCHEMA IF NOT EXISTS bench;

-- Times are UTC `timestamp` values (no zone arithmetic, so they are cheap to make and to format).
-- ISO-8601 with milliseconds and a trailing Z, as the service's Timestamp writes it.
CREATE FUNCTION bench.iso(t timestamp) RETURNS text IMMUTABLE LANGUAGE sql
    RETURN to_char(t, 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"');

-- When pin i reached version v: one second per event in log order plus a few milliseconds, so times
-- rise along the log the way recorded_at does.
CREATE FUNCTION bench.event_time(i int, v int, pins int) RETURNS timestamp IMMUTABLE LANGUAGE sql
    RETURN timestamp '2024-01-01 00:00:00'
           + ((v - 1)::bigint * pins + i) * interval '1 second' + (i * 37 % 1000) * interval '1 millisecond';

CREATE PROCEDURE bench.generate_events(pins int, blocks int) LANGUAGE plpgsql AS $$
DECLARE
    block_size int := (pins + blocks - 1) / blocks;
BEGIN
    FOR v IN 1..7 LOOP
        FOR b IN 0..blocks - 1 LOOP
            INSERT INTO locations.events
                (stream_name, stream_version, event_type, schema_version, data, metadata, actor_key,
                 idempotency_key, recorded_at)
            SELECT 'location-' || p.object_id, v,
                   CASE WHEN v = 1 THEN 'LocationPosted' WHEN p.deleted THEN 'LocationDeleted' ELSE 'LocationUpdated' END,
                   1,
                   CASE WHEN p.deleted
                        THEN jsonb_build_object('objectId', p.object_id, 'uniqueKey', p.owner,
                                                'deletedAt', bench.iso(p.changed_at))
                        ELSE jsonb_build_object(
                            'objectId', p.object_id, 'uniqueKey', p.owner,
                            'firstName', p.first_name, 'lastName', p.last_name,
                            'mapString', (ARRAY['Mountain View, CA', 'Berlin, Germany', 'Lagos, Nigeria',
                                                'Kyoto, Japan', 'São Paulo, Brazil', 'Toronto, ON'])[1 + (p.i + v) % 6],
                            'mediaURL', 'https://example.com/students/' || p.i || '/links/' || v,
                            -- Degrees with three decimals, computed exactly, then stored as the double the service has.
                            'latitude', (((p.i::bigint * 7919 + v * 104729) % 170000 - 85000) / 1000.0)::float8,
                            'longitude', (((p.i::bigint * 6007 + v * 15485863) % 360000 - 180000) / 1000.0)::float8,
                            'createdAt', bench.iso(bench.event_time(p.i, 1, pins)),
                            'updatedAt', bench.iso(p.changed_at))
                   END,
                   jsonb_build_object(
                       'actor', jsonb_build_object('key', p.owner, 'firstName', p.first_name, 'lastName', p.last_name),
                       'requestId', md5(p.i || '-' || v),
                       'userAgent', 'OnTheMap/1.0')
                   || CASE WHEN v = 1
                           THEN jsonb_build_object('idempotencyKey', 'post-' || p.i,
                                                   'requestHash', md5(p.i::text) || md5(p.object_id))
                           ELSE '{}'::jsonb END,
                   p.owner,
                   CASE WHEN v = 1 THEN 'post-' || p.i END,
                   p.changed_at AT TIME ZONE 'UTC'
            FROM (
                SELECT i,
                       -- Ten characters, unique (the hex tail is i itself), unordered (the md5 head).
                       left(md5(i::text), 4) || lpad(to_hex(i), 6, '0') AS object_id,
                       -- Some accounts own two pins.
                       'acct-' || (i % (pins * 4 / 5)) AS owner,
                       (ARRAY['Ada', 'Grace', 'Alan', 'Edsger', 'Barbara', 'Donald', 'Margaret', 'Ken'])[1 + i % 8] AS first_name,
                       (ARRAY['Lovelace', 'Hopper', 'Turing', 'Dijkstra', 'Liskov', 'Knuth', 'Hamilton', 'Thompson'])[1 + (i / 8) % 8] AS last_name,
                       1 + 2 * (i % 4) AS versions,
                       (i % 10 = 3 AND v = 1 + 2 * (i % 4)) AS deleted,
                       bench.event_time(i, v, pins) AS changed_at
                FROM generate_series(b * block_size, least((b + 1) * block_size, pins) - 1) AS i
            ) AS p
            WHERE p.versions >= v
            ORDER BY p.i;
            COMMIT;
        END LOOP;
    END LOOP;
END
$$;

CALL bench.generate_events(:pins, :blocks);
