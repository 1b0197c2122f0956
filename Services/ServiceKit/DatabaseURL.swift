import Foundation
import PostgresNIO

/// `DATABASE_URL`: `postgres://user[:password]@host[:port]/database`, or a unix socket folder given as
/// `postgres://user@/database?host=/path/to/socket-dir` (libpq's spelling).
public struct DatabaseURL: Sendable, CustomStringConvertible {
    public var configuration: PostgresClient.Configuration
    private let redacted: String

    public init(_ text: String) throws(ConfigurationError) {
        guard let components = URLComponents(string: text),
            let scheme = components.scheme, ["postgres", "postgresql"].contains(scheme)
        else { throw ConfigurationError("DATABASE_URL must look like postgres://user:password@host:5432/database, got \"\(text)\"") }
        let user = components.user.flatMap { $0.removingPercentEncoding } ?? "postgres"
        let password = components.password.flatMap { $0.removingPercentEncoding }
        let database = String(components.path.drop(while: { $0 == "/" }))
        guard !database.isEmpty else { throw ConfigurationError("DATABASE_URL names no database (the path after the host)") }
        let query = Dictionary((components.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { $1 })
        if let mode = query["sslmode"], !["disable", "allow", "prefer"].contains(mode) {
            throw ConfigurationError("DATABASE_URL asks for sslmode=\(mode); only connections without TLS are supported (sslmode=disable)")
        }
        if let socketDirectory = query["host"], socketDirectory.hasPrefix("/") {
            let port = components.port ?? 5432
            configuration = .init(unixSocketPath: "\(socketDirectory)/.s.PGSQL.\(port)", username: user, password: password, database: database)
        } else {
            guard let host = components.host, !host.isEmpty else { throw ConfigurationError("DATABASE_URL names no host") }
            configuration = .init(host: host, port: components.port ?? 5432, username: user, password: password, database: database, tls: .disable)
        }
        configuration.options.connectTimeout = .seconds(3)
        configuration.options.maximumConnections = Self.maximumConnections
        // The pool sets a timer each time a connection falls idle, which its next lease cancels, and a
        // cancelled `Task.sleep` keeps its task and dispatch timer until its deadline: under steady load the
        // timers pile up with the length of their deadlines (BENCHMARKS.md, "Soak"). So no keep-alive query
        // (a connection that PostgreSQL or the load balancer closes is seen closed without one), and a short
        // idle timeout: the first query after a quiet spell pays for a new connection. A minimum of
        // connections kept open would set no timer at all, but PostgresNIO's pool stops the process on a
        // precondition when a lease finds fewer connections than that minimum, as it does while the
        // database is away.
        configuration.options.keepAliveBehavior = nil
        configuration.options.connectionIdleTimeout = .seconds(10)
        var shown = components
        if shown.password != nil { shown.password = "***" }
        redacted = shown.string ?? "postgres://…"
    }

    /// Enough for 32 concurrent appends plus the LISTEN connection; PostgresNIO's default is 20.
    public static let maximumConnections = 40

    public var description: String { redacted }
}
