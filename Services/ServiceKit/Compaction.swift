import Logging
import PostgresNIO

/// What an operator runs after erasures (each service's `compact` command): the tables' statistics taken
/// again, then each table and the catalog of statistics rewritten (`VACUUM FULL`), so that their files hold
/// no row version an erasure deleted (a deleted row stays in its page until the page is rewritten, and
/// `ANALYZE` keeps sample values, such as a name common to several pins, in `pg_statistic`). Each table is
/// locked while it is rewritten: writes to it wait, for seconds per million rows. Rewriting
/// `pg_statistic` needs a superuser; without one PostgreSQL skips it with a warning.
public enum Compaction {
    public struct EarlierTransactionsRunning: Error, CustomStringConvertible {
        public let transactions: [String]
        public var description: String {
            "transactions whose snapshots are older than compaction still run, and their row versions would be kept: "
                + transactions.joined(separator: "; ") + ". End them (pg_terminate_backend) or wait, then compact again."
        }
    }

    public static func run(tables: [String], on client: PostgresClient, logger: Logger, wait: Duration = .seconds(60)) async throws {
        for table in tables {
            try await forgetStatistics(of: table, on: client, logger: logger)
            try await client.query(PostgresQuery(unsafeSQL: "ANALYZE \(table)"), logger: logger)
        }
        try await awaitEarlierTransactions(on: client, logger: logger, wait: wait)
        for table in tables + ["pg_catalog.pg_statistic"] {
            try await client.query(PostgresQuery(unsafeSQL: "VACUUM FULL \(table)"), logger: logger)
        }
    }

    /// `ANALYZE` of a table it finds empty computes nothing and leaves the statistics it took before in
    /// place (an erased student's key among the most common values of a table the erasure emptied): the
    /// table's and its indexes' go first. Writing `pg_statistic` needs a superuser; without one the old
    /// statistics stay until the table has rows again, and PostgreSQL says so.
    static func forgetStatistics(of table: String, on client: PostgresClient, logger: Logger) async throws {
        do {
            try await client.query(
                """
                DELETE FROM pg_catalog.pg_statistic WHERE starelid = \(table)::text::regclass
                   OR starelid IN (SELECT indexrelid FROM pg_catalog.pg_index WHERE indrelid = \(table)::text::regclass)
                """, logger: logger)
        } catch let error as PSQLError where error.serverInfo?[.sqlState] == "42501" {
            logger.warning("not a superuser: the statistics of an emptied table keep what they held", metadata: ["table": "\(table)"])
        }
    }

    /// A transaction of this database whose snapshot is older than the rewrite: while it runs, a rewrite
    /// must copy every row version it may still read, so an erasure that committed after its snapshot was
    /// taken is kept in the new files, and so are the statistics our `ANALYZE` just replaced in
    /// `pg_statistic` (they sample the rows as they were); and an automatic `ANALYZE` that began before the
    /// erasure samples the rows being deleted and writes them to `pg_statistic` when it ends. A snapshot
    /// taken after the erasure can be as old, too, the rewrite's own among them: its horizon is the oldest
    /// transaction then writing anywhere on the server, other databases' included. So compaction takes a
    /// transaction id of its own after its `ANALYZE`, and waits, up to `wait`, until no transaction of this
    /// database has a snapshot from before it (autovacuum's own `VACUUM`, which holds no row back, aside)
    /// and no transaction anywhere that writes has been writing since before it. Other roles' transactions
    /// (autovacuum's too) are visible only to a superuser or `pg_read_all_stats`.
    static func awaitEarlierTransactions(on client: PostgresClient, logger: Logger, wait: Duration) async throws {
        let started = ContinuousClock.now
        let marker = try await client.query("SELECT pg_current_xact_id()::text", logger: logger).collect().first?.decode(String.self) ?? "0"
        let query: PostgresQuery = """
            WITH mark AS (SELECT age((\(marker)::bigint % 4294967296)::text::xid) AS age)
            SELECT pid, backend_type, coalesce(application_name, ''), coalesce(xact_start::text, '') FROM pg_stat_activity, mark
            WHERE pid <> pg_backend_pid() AND (
                age(backend_xid) > mark.age
                OR datname = current_database() AND age(backend_xmin) > mark.age
                   AND NOT (backend_type = 'autovacuum worker' AND query LIKE 'autovacuum: VACUUM%' AND query NOT LIKE '%ANALYZE%'))
            """
        var reported = started
        while true {
            let running = try await client.query(query, logger: logger).collect().map { row in
                let (pid, type, application, start) = try row.decode((Int32, String, String, String).self)
                return "pid \(pid) (\(application.isEmpty ? type : application), since \(start))"
            }
            if running.isEmpty { return }
            let now = ContinuousClock.now
            if now - started >= wait { throw EarlierTransactionsRunning(transactions: running) }
            if now - reported >= .seconds(5) {
                logger.notice("compaction waits for transactions whose snapshots are older than it", metadata: ["transactions": "\(running)"])
                reported = now
            }
            try await Task.sleep(for: .milliseconds(100))
        }
    }
}
