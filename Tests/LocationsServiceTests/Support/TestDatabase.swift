import PostgresNIO
import ServiceKit
import TestSupport

@testable import LocationsService

extension TestDatabase {
    func configuration(port: Int = 0, token: String = TestDatabase.internalToken) throws -> ServiceConfiguration {
        var configuration = try ServiceConfiguration.fromEnvironment(["DATABASE_URL": url, "INTERNAL_TOKEN": token, "LOG_LEVEL": "warning"])
        configuration.port = port
        return configuration
    }

    /// Runs `body` with a pool on this database, with the schema migrated.
    func withClient<T: Sendable>(_ body: @escaping @Sendable (PostgresClient) async throws -> T) async throws -> T {
        try await withPostgresClient(try databaseURL, logger: Self.logger) { client in
            try await Migrations.migrator(client, logger: Self.logger).migrate()
            return try await body(client)
        }
    }
}
