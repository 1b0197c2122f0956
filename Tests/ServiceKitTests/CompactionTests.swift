import PostgresNIO
import ServiceKit
import TestSupport
import Testing

/// Compaction leaves no deleted row in the files, even when a transaction that could still read the row was
/// running when it was asked to compact: it waits for that transaction, or says which one to end.
@Suite struct CompactionTests {
    static let secret = "Quillfeather-compaction-4e1d"

    @Test func aTransactionOlderThanTheDeletionIsWaitedForThenTheFilesAreClean() async throws {
        let test = try await TestDatabase.create()
        try await withPostgresClient(try test.databaseURL, logger: TestDatabase.logger) { client in
            try await client.query("CREATE TABLE notes (body text)", logger: TestDatabase.logger)
            try await client.query("INSERT INTO notes VALUES (\(Self.secret)), ('kept')", logger: TestDatabase.logger)
            try await client.withConnection { reader in
                // A reader whose snapshot still sees the row: a rewrite while it runs would copy the row.
                try await reader.query("BEGIN ISOLATION LEVEL REPEATABLE READ", logger: TestDatabase.logger)
                _ = try await reader.query("SELECT count(*) FROM notes", logger: TestDatabase.logger).collect()
                let readerPID = try await reader.query("SELECT pg_backend_pid()", logger: TestDatabase.logger).collect().first?.decode(Int32.self)
                try await client.query("DELETE FROM notes WHERE body = \(Self.secret)", logger: TestDatabase.logger)

                let refusal = await #expect(throws: Compaction.EarlierTransactionsRunning.self) {
                    try await Compaction.run(tables: ["notes"], on: client, logger: TestDatabase.logger, wait: .milliseconds(300))
                }
                // The reader is named; other suites' transactions on the shared cluster may be named beside it.
                #expect(refusal?.transactions.contains { $0.hasPrefix("pid \(readerPID ?? 0) ") } == true, "\(String(describing: refusal))")
                #expect(refusal?.description.contains("pg_terminate_backend") == true, "\(String(describing: refusal))")

                // The reader ends once the compaction says it waits for it, and the compaction goes on.
                let log = CapturedLog()
                async let compacted: Void = Compaction.run(tables: ["notes"], on: client, logger: log.logger(), wait: .seconds(30))
                #expect(await log.contains("compaction waits for transactions", within: .seconds(30)), "\(log.all)")
                try await reader.query("COMMIT", logger: TestDatabase.logger)
                try await compacted
            }
            let left = try await TestDatabase.relationsHolding([Self.secret, "kept"], client)
            #expect(left.keys.sorted() == ["kept"], "\(left)")
        }
    }

    @Test func aTableTheDeletionEmptiedKeepsNoStatisticsOfWhatItHeld() async throws {
        let test = try await TestDatabase.create()
        try await withPostgresClient(try test.databaseURL, logger: TestDatabase.logger) { client in
            try await client.query("CREATE TABLE notes (body text)", logger: TestDatabase.logger)
            try await client.query("INSERT INTO notes SELECT \(Self.secret) FROM generate_series(1, 200)", logger: TestDatabase.logger)
            try await client.query("ANALYZE notes", logger: TestDatabase.logger)
            try await client.query("DELETE FROM notes", logger: TestDatabase.logger)
            try await Compaction.run(tables: ["notes"], on: client, logger: TestDatabase.logger)
            let left = try await TestDatabase.relationsHolding([Self.secret], client)
            #expect(left.isEmpty, "\(left)")
        }
    }
}
