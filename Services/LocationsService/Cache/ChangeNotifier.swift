import Logging
import PostgresNIO
import ServiceKit
import ServiceLifecycle

/// Keeps replicas' caches coherent through PostgreSQL `LISTEN/NOTIFY`. A notification is only a wake-up
/// ("the log moved"); the log stays the truth.
///
/// Announcements are coalesced: at most one `NOTIFY` is in flight, and any number of appends meanwhile
/// cause one more (the stream keeps one pending announcement, the newest). That keeps `NOTIFY`, which
/// serialises committing transactions, out of the append path.
final class ChangeNotifier: Service, Sendable {
    static let channel = "locations_changed"

    private let client: PostgresClient
    private let logger: Logger
    private let onChange: @Sendable () -> Void
    private let onConnectionChange: @Sendable (Bool) -> Void
    private let pending = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))

    init(
        client: PostgresClient, logger: Logger, onChange: @escaping @Sendable () -> Void,
        onConnectionChange: @escaping @Sendable (Bool) -> Void
    ) {
        self.client = client
        self.logger = logger
        self.onChange = onChange
        self.onConnectionChange = onConnectionChange
    }

    /// Tells every replica (this one included) that the log moved.
    func announce() {
        pending.continuation.yield()
    }

    /// Listens, and announces, until shutdown.
    func run() async throws {
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask {
                for await _ in self.pending.stream {
                    do {
                        // (`rows(of:)`, as a query sent otherwise to a connection that just closed would wait
                        // for ever, and nothing more would be announced.)
                        _ = try await self.client.withOpenConnection {
                            try await $0.rows(of: "SELECT pg_notify(\(Self.channel), '')", logger: self.logger)
                        }
                    } catch {
                        self.logger.warning("could not announce a change", metadata: ["error": "\(String(reflecting: error))"])
                    }
                }
            }
            try await ChannelListener(
                client: client, channel: Self.channel, logger: logger,
                onNotification: { [onChange] _ in onChange() },
                onConnectionChange: onConnectionChange
            ).run()
            // Shutting down: what is pending is announced, then the announcing ends.
            pending.continuation.finish()
        }
    }
}
