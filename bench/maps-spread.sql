-- Before bench/generate-events.sql, after bench/maps-create.sql: puts each pin's events on a map as they are
-- appended, pin i (the hex tail of its object id, as generate-events.sql makes it) on bench.map_of(i), so
-- the same history as the replay benchmark's is spread over the class maps and the default map.
-- The caller drops the trigger once the log is written.
CREATE FUNCTION bench.spread_over_maps() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.map := bench.map_of(('x' || right(NEW.stream_name, 6))::bit(24)::int);
    RETURN NEW;
END
$$;

CREATE TRIGGER events_spread_over_maps BEFORE INSERT ON locations.events
    FOR EACH ROW WHEN (NEW.stream_name LIKE 'location-%') EXECUTE FUNCTION bench.spread_over_maps();
