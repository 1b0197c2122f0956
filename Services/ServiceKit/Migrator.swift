import Logging
import PostgresNIO

/// One numbered schema change: statements run in order, in one transaction, exactly once.
public struct Migration: Sendable {
    public let version: Int
    public let name: String
    /// One SQL statement each: the extended query protocol takes a single statement at a time.
    public let statements: [String]

    public init(version: Int, name: String, statements: [String]) {
        self.version = version
        self.name = name
        self.statements = statements
    }
}

/// Brings one schema up to date. Several replicas may start at once: an advisory lock lets one migrate
/// while the others wait, then find nothing left to do. What ran is recorded in `<schema>.schema_migrations`.
public struct Migrator: Sendable {
    public let client: PostgresClient
    public let logger: Logger
    public let schema: String
    public let migrations: [Migration]

    public init(client: PostgresClient, logger: Logger, schema: String, migrations: [Migration]) {
        self.client = client
        self.logger = logger
        self.schema = schema
        self.migrations = migrations
    }

    /// The advisory lock key: one per schema, so each service migrates its own without waiting for others.
    private var lockKey: Int64 {
        Int64(bitPattern: schema.utf8.reduce(UInt64(0x6F6E_7468_656D_6170)) { ($0 &* 31) &+ UInt64($1) })
    }

    public func migrate() async throws {
        try await client.withConnection { connection in
            try await connection.query("SELECT pg_advisory_lock(\(lockKey))", logger: logger)
            do {
                try await applyPending(on: connection)
                try await connection.query("SELECT pg_advisory_unlock(\(lockKey))", logger: logger)
            } catch {
                _ = try? await connection.query("SELECT pg_advisory_unlock(\(lockKey))", logger: logger)
                throw error
            }
        }
    }

    private func applyPending(on connection: PostgresConnection) async throws {
        try await connection.query(PostgresQuery(unsafeSQL: "CREATE SCHEMA IF NOT EXISTS \(schema)"), logger: logger)
        try await connection.query(
            PostgresQuery(
                unsafeSQL: """
                    CREATE TABLE IF NOT EXISTS \(schema).schema_migrations (
                        version integer PRIMARY KEY,
                        name text NOT NULL,
                        applied_at timestamptz NOT NULL DEFAULT now()
                    )
                    """), logger: logger)
        let rows = try await connection.query(PostgresQuery(unsafeSQL: "SELECT version FROM \(schema).schema_migrations"), logger: logger)
        let applied = Set(try await rows.collect().map { try $0.decode(Int.self) })
        for migration in migrations where !applied.contains(migration.version) {
            logger.info("applying migration", metadata: ["schema": "\(schema)", "version": "\(migration.version)", "name": "\(migration.name)"])
            try await connection.withTransaction(logger: logger) { connection in
                for statement in migration.statements {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                var bindings = PostgresBindings()
                bindings.append(migration.version)
                bindings.append(migration.name)
                try await connection.query(
                    PostgresQuery(
                        unsafeSQL: "INSERT INTO \(schema).schema_migrations (version, name) VALUES ($1, $2)", binds: bindings), logger: logger)
            }
        }
    }

    /// True when every migration this build knows has been applied.
    public static func isCurrent(_ database: Database, schema: String, migrations: [Migration]) async throws -> Bool {
        let rows = try await database.query(PostgresQuery(unsafeSQL: "SELECT coalesce(max(version), 0) FROM \(schema).schema_migrations"))
        let latest = try rows.first?.decode(Int.self) ?? 0
        return latest >= (migrations.last?.version ?? 0)
    }
}
