-- After replay over a log of many maps: the read models the service swapped in against the SQL rebuild, row
-- for row. Prints: live pins, SQL pins, rows of the pins, maps and members in one but not the other (0 when
-- they match), and the class maps with pins in the live read model.
SELECT (SELECT count(*) FROM locations.pins) AS live_rows,
       (SELECT count(*) FROM bench.sql_pins) AS sql_rows,
       (SELECT count(*) FROM (TABLE locations.pins EXCEPT ALL TABLE bench.sql_pins) AS only_live)
     + (SELECT count(*) FROM (TABLE bench.sql_pins EXCEPT ALL TABLE locations.pins) AS only_sql)
     + (SELECT count(*) FROM (TABLE locations.maps EXCEPT ALL TABLE bench.sql_maps) AS only_live)
     + (SELECT count(*) FROM (TABLE bench.sql_maps EXCEPT ALL TABLE locations.maps) AS only_sql)
     + (SELECT count(*) FROM (TABLE locations.map_members EXCEPT ALL TABLE bench.sql_map_members) AS only_live)
     + (SELECT count(*) FROM (TABLE bench.sql_map_members EXCEPT ALL TABLE locations.map_members) AS only_sql)
       AS differing_rows,
       (SELECT count(DISTINCT map) FROM locations.pins WHERE map <> '') AS maps_with_pins;
