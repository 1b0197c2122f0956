-- After replay: the read model the service swapped in against the SQL rebuild, row for row.
-- Prints: live rows, SQL rows, rows in one but not the other (0 when they match).
SELECT (SELECT count(*) FROM locations.pins) AS live_rows,
       (SELECT count(*) FROM bench.sql_pins) AS sql_rows,
       (SELECT count(*) FROM (TABLE locations.pins EXCEPT ALL TABLE bench.sql_pins) AS only_live)
     + (SELECT count(*) FROM (TABLE bench.sql_pins EXCEPT ALL TABLE locations.pins) AS only_sql) AS differing_rows;
