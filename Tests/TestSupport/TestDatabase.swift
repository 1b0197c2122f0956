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

extension TestDatabase {
    /// Which of `strings` some file of this database holds, once every page is on disk: its tables, their
    /// indexes and TOAST, and its catalogs, as a raw read of the cluster's directory finds them.
    public static func filesHolding(_ strings: [String], _ client: PostgresClient) async throws -> Set<String> {
        Set(try await relationsHolding(strings, client).keys)
    }

    /// Each of `strings` that some file of this database holds, with the relations whose files hold it (a
    /// file no relation has any more is named by its file name), so that a failed scan says where it looked.
    public static func relationsHolding(_ strings: [String], _ client: PostgresClient) async throws -> [String: [String]] {
        try await client.query("CHECKPOINT", logger: TestDatabase.logger)
        let rows = try await client.query(
            """
            SELECT current_setting('data_directory') || '/base/' || oid FROM pg_database WHERE datname = current_database()
            """, logger: TestDatabase.logger)
        guard let directory = try await rows.collect().first?.decode(String.self) else { throw HarnessError("no database directory") }
        var found: [String: [String]] = [:]
        let needles = strings.map { Data($0.utf8) }
        for name in try FileManager.default.contentsOfDirectory(atPath: directory).sorted() {
            guard let contents = FileManager.default.contents(atPath: directory + "/" + name) else { continue }
            for (string, needle) in zip(strings, needles) where contents.range(of: needle) != nil {
                var holder = try await relation(ofFile: name, client) ?? name
                if holder.hasPrefix("pg_statistic ") { holder += " " + (try await statistics(holding: string, client)) }
                found[string, default: []].append(holder)
            }
        }
        return found
    }

    /// Which columns' statistics hold `string` now, as a live row of `pg_statistic` (none: only a dead one).
    static func statistics(holding string: String, _ client: PostgresClient) async throws -> String {
        let rows = try await client.query(
            """
            SELECT starelid::regclass::text || '.' || staattnum FROM pg_statistic
            WHERE concat_ws(' ', stavalues1::text, stavalues2::text, stavalues3::text, stavalues4::text, stavalues5::text) LIKE '%' || \(string) || '%'
            """, logger: TestDatabase.logger)
        let columns = try await rows.collect().map { try $0.decode(String.self) }
        return "(live statistics of \(columns.isEmpty ? "none" : columns.joined(separator: ", ")))"
    }

    /// The relation a file of the database's directory belongs to ("16384", "16384_fsm", "16384.1").
    static func relation(ofFile name: String, _ client: PostgresClient) async throws -> String? {
        guard let node = Int64(name.prefix { $0.isNumber }) else { return nil }
        let rows = try await client.query("SELECT pg_filenode_relation(0, \(node)::oid)::regclass::text", logger: TestDatabase.logger)
        return try await rows.collect().first?.decode(String?.self).map { "\($0) (\(name))" }
    }
}
