import Logging
import PostgresNIO

/// Brings schema `locations` up to date. Several replicas may start at once: an advisory lock lets one
/// migrate while the others wait, then find nothing left to do.
struct Migrator: Sendable {
    let client: PostgresClient
    let logger: Logger

    /// Any 64-bit constant works; this one spells "loc-migr" in ASCII.
    static let advisoryLockKey: Int64 = 0x6C6F_632D_6D69_6772

    func migrate() async throws {
        try await client.withConnection { connection in
            try await connection.query("SELECT pg_advisory_lock(\(Self.advisoryLockKey))", logger: logger)
            do {
                try await applyPending(on: connection)
                try await connection.query("SELECT pg_advisory_unlock(\(Self.advisoryLockKey))", logger: logger)
            } catch {
                _ = try? await connection.query("SELECT pg_advisory_unlock(\(Self.advisoryLockKey))", logger: logger)
                throw error
            }
        }
    }

    private func applyPending(on connection: PostgresConnection) async throws {
        try await connection.query("CREATE SCHEMA IF NOT EXISTS locations", logger: logger)
        try await connection.query("""
            CREATE TABLE IF NOT EXISTS locations.schema_migrations (
                version integer PRIMARY KEY,
                name text NOT NULL,
                applied_at timestamptz NOT NULL DEFAULT now()
            )
            """, logger: logger)
        let rows = try await connection.query("SELECT version FROM locations.schema_migrations", logger: logger)
        let applied = Set(try await rows.collect().map { try $0.decode(Int.self) })
        for migration in Migrations.all where !applied.contains(migration.version) {
            logger.info("applying migration", metadata: ["version": "\(migration.version)", "name": "\(migration.name)"])
            try await connection.withTransaction(logger: logger) { connection in
                for statement in migration.statements {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                try await connection.query(
                    "INSERT INTO locations.schema_migrations (version, name) VALUES (\(migration.version), \(migration.name))",
                    logger: logger)
            }
        }
    }

    /// True when every migration this build knows has been applied.
    static func isCurrent(_ database: Database) async throws -> Bool {
        let rows = try await database.query("SELECT coalesce(max(version), 0) FROM locations.schema_migrations")
        let latest = try rows.first?.decode(Int.self) ?? 0
        return latest >= (Migrations.all.last?.version ?? 0)
    }
}
