import HTTPTypes
import Foundation
import Logging
import PostgresNIO
import ServiceKit
@testable import LocationsService

/// A fresh, empty database on the test cluster the test script started, one per test.
struct TestDatabase: Sendable {
    let name: String
    let url: String

    static var adminURL: String {
        ProcessInfo.processInfo.environment["TEST_DATABASE_URL"] ?? "postgres://onthemap@127.0.0.1:5432/postgres"
    }

    static let logger: Logger = {
        var logger = Logger(label: "tests")
        logger.logLevel = .warning
        return logger
    }()

    static func create() async throws -> TestDatabase {
        let name = "t_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(16)
        try await withAdminConnection { client in
            try await client.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(name)"), logger: logger)
        }
        let admin = URLComponents(string: adminURL)!
        var components = admin
        components.path = "/\(name)"
        return TestDatabase(name: String(name), url: components.string!)
    }

    static func withAdminConnection(_ body: @escaping @Sendable (PostgresClient) async throws -> Void) async throws {
        let configuration = try ServiceConfiguration.fromEnvironment(["DATABASE_URL": adminURL], needsToken: false)
        try await withPostgresClient(configuration.database, logger: logger, body)
    }

    func configuration(port: Int = 0, token: String = TestDatabase.internalToken) throws -> ServiceConfiguration {
        var configuration = try ServiceConfiguration.fromEnvironment(["DATABASE_URL": url, "INTERNAL_TOKEN": token, "LOG_LEVEL": "warning"])
        configuration.port = port
        return configuration
    }

    /// Runs `body` with a pool on this database, with the schema migrated.
    func withClient<T: Sendable>(_ body: @escaping @Sendable (PostgresClient) async throws -> T) async throws -> T {
        try await withPostgresClient(try configuration().database, logger: Self.logger) { client in
            try await Migrations.migrator(client, logger: Self.logger).migrate()
            return try await body(client)
        }
    }

    static let internalToken = "test-internal-token-0123456789"
}
