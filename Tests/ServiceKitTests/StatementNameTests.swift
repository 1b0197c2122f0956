import Testing

@testable import ServiceKit

/// A database statement's span is named by what it does and to which table, never by its values (which
/// are parameters, not in its text).
@Suite struct StatementNameTests {
    @Test(arguments: [
        ("SELECT object_id FROM locations.pins ORDER BY updated_at DESC LIMIT $1", "SELECT locations.pins"),
        (
            "WITH input AS (SELECT * FROM unnest($1::text[])) INSERT INTO locations.events (stream) SELECT stream FROM input",
            "INSERT locations.events"
        ),
        ("INSERT INTO auth.sessions (digest) VALUES ($1) ON CONFLICT (digest) DO UPDATE SET seen = now()", "INSERT auth.sessions"),
        ("UPDATE auth.accounts SET disabled = true WHERE key = $1", "UPDATE auth.accounts"),
        ("DELETE FROM auth.login_failures WHERE subject = $1", "DELETE auth.login_failures"),
        ("SELECT key FROM auth.accounts WHERE email = $1 FOR UPDATE", "SELECT auth.accounts"),
        ("SELECT pg_snapshot_xmin(pg_current_snapshot())", "SELECT"),
        ("", "statement"),
    ])
    func aStatementIsNamedByItsCommandAndTable(sql: String, name: String) {
        #expect(RequestTracing.statementName(sql) == name)
        // Named again from what was kept the first time, the same.
        #expect(RequestTracing.statementName(sql) == name)
    }

    /// Past the texts whose names are kept, each is still named, every time.
    @Test func moreTextsThanAreKeptAreEachNamed() {
        let texts = (0..<(RequestTracing.namesKept + 50)).map { "DELETE FROM scratch.table_\($0) WHERE key = $1" }
        for _ in 0..<2 {
            for (index, text) in texts.enumerated() {
                #expect(RequestTracing.statementName(text) == "DELETE scratch.table_\(index)")
            }
        }
    }
}
