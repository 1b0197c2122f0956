import Foundation
import Logging
import PostgresNIO
import ServiceKit

/// A fresh, empty database on the test cluster the test script started, one per test.
public struct TestDatabase: Sendable {
    public let name: String
    public let url: String

    public static var adminURL: String {
        ProcessInfo.processInfo.environment["TEST_DATABASE_URL"] ?? "postgres://onthemap@127.0.0.1:5432/postgres"
    }

    /// The secret the tests' services share.
    public static let internalToken = "test-internal-token-0123456789"

    public static let logger: Logger = {
        var logger = Logger(label: "tests")
        logger.logLevel = .warning
        return logger
    }()

    public static func create() async throws -> TestDatabase {
        let name = "t_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(16)
        _ = try await withPostgresClient(try DatabaseURL(adminURL), logger: logger) { client in
            try await client.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(name)"), logger: logger)
        }
        var components = URLComponents(string: adminURL)!
        components.path = "/\(name)"
        return TestDatabase(name: String(name), url: components.string!)
    }

    public var databaseURL: DatabaseURL { get throws { try DatabaseURL(url) } }
}

public struct HarnessError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
