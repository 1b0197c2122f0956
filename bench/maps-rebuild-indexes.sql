-- The indexes the service's read models have (see Migrations.swift and MapMigration.swift), so the SQL
-- rebuild ends with tables as ready to serve as those replay swaps in.
ALTER TABLE bench.sql_pins ADD PRIMARY KEY (object_id);
CREATE INDEX sql_pins_newest_first ON bench.sql_pins (map, updated_at DESC, object_id DESC);
CREATE INDEX sql_pins_by_owner ON bench.sql_pins (unique_key, updated_at DESC);
ALTER TABLE bench.sql_maps ADD PRIMARY KEY (slug);
ALTER TABLE bench.sql_map_members ADD PRIMARY KEY (map, account_key);
CREATE INDEX sql_map_members_by_account ON bench.sql_map_members (account_key);
