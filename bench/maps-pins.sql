-- The log of the class maps' read benchmarks, after bench/maps-create.sql: :per_map pins on every class map
-- and on the default map (pin i on bench.map_of(i)), each one LocationPosted event in exactly the shape the
-- service appends, and its row in the read model (locations.pins) written in the same statement, as a post
-- writes it; then the pin counts the read model's trigger would have kept. Pins of every map interleave in
-- the log; one transaction per block of :block pins. Times rise along the log (one second per pin), so each
-- map's newest 100 are its last 100.
-- Usage: psql -v per_map=100 -v block=100000 -f bench/maps-pins.sql

CREATE PROCEDURE bench.generate_map_pins(pins int, block int) LANGUAGE plpgsql AS $$
BEGIN
    FOR start_at IN 0..pins - 1 BY block LOOP
        WITH pin AS (
            SELECT i,
                   -- Ten characters, unique (the hex tail is i itself), unordered (the md5 head).
                   left(md5(i::text), 4) || lpad(to_hex(i), 6, '0') AS object_id,
                   'acct-' || i AS owner,
                   (ARRAY['Ada', 'Grace', 'Alan', 'Edsger', 'Barbara', 'Donald', 'Margaret', 'Ken'])[1 + i % 8] AS first_name,
                   (ARRAY['Lovelace', 'Hopper', 'Turing', 'Dijkstra', 'Liskov', 'Knuth', 'Hamilton', 'Thompson'])[1 + (i / 8) % 8] AS last_name,
                   (ARRAY['Mountain View, California, United States', 'Berlin, Brandenburg, Germany',
                          'Lagos, Lagos State, Nigeria', 'Kyoto, Kyoto Prefecture, Japan',
                          'Sao Paulo, Sao Paulo, Brazil'])[1 + i % 5] AS map_string,
                   'https://www.udacity.com/course/ios-developer-nanodegree--nd003?student=' || i AS media_url,
                   -- Degrees with three decimals, computed exactly, then stored as the double the service has.
                   (((i::bigint * 7919) % 170000 - 85000) / 1000.0)::float8 AS latitude,
                   (((i::bigint * 6007) % 360000 - 180000) / 1000.0)::float8 AS longitude,
                   timestamp '2024-01-01 00:00:00' + i * interval '1 second' + (i * 37 % 1000) * interval '1 millisecond' AS at,
                   bench.map_of(i) AS map
            FROM generate_series(start_at, least(start_at + block, pins) - 1) AS i
        ), appended AS (
            INSERT INTO locations.events
                (stream_name, stream_version, event_type, schema_version, data, metadata, actor_key, idempotency_key,
                 map, recorded_at)
            SELECT 'location-' || object_id, 1, 'LocationPosted', 1,
                   jsonb_build_object(
                       'objectId', object_id, 'uniqueKey', owner, 'firstName', first_name, 'lastName', last_name,
                       'mapString', map_string, 'mediaURL', media_url, 'latitude', latitude, 'longitude', longitude,
                       'createdAt', to_char(at, 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                       'updatedAt', to_char(at, 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')),
                   jsonb_build_object(
                       'actor', jsonb_build_object('key', owner, 'firstName', first_name, 'lastName', last_name),
                       'requestId', md5(i::text), 'userAgent', 'OnTheMap/1.0'),
                   owner, NULL, map, at AT TIME ZONE 'UTC'
            FROM pin
            ORDER BY i
        )
        INSERT INTO locations.pins
            (object_id, unique_key, first_name, last_name, map_string, media_url, latitude, longitude, created_at,
             updated_at, version, map)
        SELECT object_id, owner, first_name, last_name, map_string, media_url, latitude, longitude,
               at AT TIME ZONE 'UTC', at AT TIME ZONE 'UTC', 1, map
        FROM pin;
        COMMIT;
    END LOOP;
END
$$;

-- The read model's per-row triggers (the pin count, the cap on pins per student, which no owner here comes
-- near: each owns one pin) are off while the pins are written; their count is made once at the end.
ALTER TABLE locations.pins DISABLE TRIGGER pins_count;
ALTER TABLE locations.pins DISABLE TRIGGER pins_per_student;
SELECT format('CALL bench.generate_map_pins(%s, %s)', :per_map * (bench.maps() + 1), :block) \gexec
ALTER TABLE locations.pins ENABLE TRIGGER pins_count;
ALTER TABLE locations.pins ENABLE TRIGGER pins_per_student;
INSERT INTO locations.pin_counts (map, unique_key, pins)
SELECT map, unique_key, count(*) FROM locations.pins GROUP BY map, unique_key;
-- Every replica's cached lists may predate these pins.
SELECT pg_notify('locations_changed', '');
