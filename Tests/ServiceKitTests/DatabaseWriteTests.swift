import PostgresNIO
import ServiceKit
import TestSupport
import Testing

/// `Database.write` reports a change as written only once its transaction has committed.
@Suite struct DatabaseWriteTests {
    @Test func aChangeWhoseCommitFailsIsNotReportedAsWrittenButAsAnOutage() async throws {
        let test = try await TestDatabase.create()
        try await withPostgresClient(try test.databaseURL, logger: TestDatabase.logger) { client in
            // What is checked is the outcome, not speed: on the loaded shared cluster a query may take more
            // than the request path's 2 s.
            let database = Database(client: client, logger: TestDatabase.logger, timeout: .seconds(30))
            // A check deferred to the commit: the statement succeeds, and its transaction fails afterwards, at
            // the protocol's Sync, once the server has sent the statement's CommandComplete. To the client
            // that is what a server stopped at that moment looks like.
            for statement: PostgresQuery in [
                "CREATE TABLE notes (id int PRIMARY KEY, fine boolean NOT NULL)",
                """
                CREATE FUNCTION refuse_at_commit() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    IF NOT NEW.fine THEN RAISE EXCEPTION 'refused at commit'; END IF;
                    RETURN NULL;
                END $$
                """,
                """
                CREATE CONSTRAINT TRIGGER refuse_at_commit AFTER INSERT ON notes
                DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION refuse_at_commit()
                """,
            ] {
                try await client.query(statement, logger: TestDatabase.logger)
            }

            let written = try await database.write("INSERT INTO notes VALUES (1, true) RETURNING id")
            #expect(try written.map { try $0.decode(Int.self) } == [1])

            let refusal = await #expect(throws: (any Error).self) {
                try await database.write("INSERT INTO notes VALUES (2, false) RETURNING id")
            }
            #expect(refusal.map(Database.isOutage) == true, "an unknown outcome is answered 503, to be tried again")
            // Answered as the connection closes, not when the deadline runs out (PostgresNIO drops a query sent
            // to a connection that has just closed: sent from off its event loop, it waited one time in two).
            #expect(refusal.map { $0 is DeadlineExceeded } == false, "the refusal was \(String(describing: refusal))")

            let stored = try await database.query("SELECT id FROM notes ORDER BY id")
            #expect(try stored.map { try $0.decode(Int.self) } == [1])
        }
    }

    @Test func aDatabaseThatCannotWriteNowIsAnOutageAndAFaultyStatementIsNot() async throws {
        let test = try await TestDatabase.create()
        try await withPostgresClient(try test.databaseURL, logger: TestDatabase.logger) { client in
            let database = Database(client: client, logger: TestDatabase.logger, timeout: .seconds(30))
            try await client.query("CREATE TABLE notes (id int)", logger: TestDatabase.logger)
            let faulty = await #expect(throws: (any Error).self) { try await database.write("INSERT INTO notes VALUES (1 / 0)") }
            #expect(faulty.map(Database.isOutage) == false, "a fault in the statement is no outage: trying again would not help")
            // What a connection finds on a standby reached during a failover, or on a primary being demoted.
            try await client.query("ALTER DATABASE \(unescaped: test.name) SET default_transaction_read_only = on", logger: TestDatabase.logger)
        }
        try await withPostgresClient(try test.databaseURL, logger: TestDatabase.logger) { client in
            let database = Database(client: client, logger: TestDatabase.logger, timeout: .seconds(30))
            let refusal = await #expect(throws: (any Error).self) { try await database.write("INSERT INTO notes VALUES (2)") }
            #expect(refusal.map(Database.isOutage) == true, "a database that cannot write now is answered 503, to be tried again")
        }
    }
}
