import Logging
import PostgresNIO

/// What an operator runs after erasures (each service's `compact` command): the tables' statistics taken
/// again, then each table and the catalog of statistics rewritten (`VACUUM FULL`), so that their files hold
/// no row version an erasure deleted (a deleted row stays in its page until the page is rewritten, and
/// `ANALYZE` keeps sample values, such as a name common to several pins, in `pg_statistic`). Each table is
/// locked while it is rewritten: writes to it wait, for seconds per million rows. Rewriting
/// `pg_statistic` needs a superuser; without one PostgreSQL skips it with a warning.
public enum Compaction {
    public static func run(tables: [String], on client: PostgresClient, logger: Logger) async throws {
        for table in tables {
            try await client.query(PostgresQuery(unsafeSQL: "ANALYZE \(table)"), logger: logger)
        }
        for table in tables + ["pg_catalog.pg_statistic"] {
            try await client.query(PostgresQuery(unsafeSQL: "VACUUM FULL \(table)"), logger: logger)
        }
    }
}
