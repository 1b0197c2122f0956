-- The indexes the service's locations.pins has (see Migrations.swift), so the SQL rebuild ends with a
-- table as ready to serve as the one replay swaps in.
ALTER TABLE bench.sql_pins ADD PRIMARY KEY (object_id);
CREATE INDEX sql_pins_newest_first ON bench.sql_pins (updated_at DESC, object_id DESC);
CREATE INDEX sql_pins_by_owner ON bench.sql_pins (unique_key, updated_at DESC);
