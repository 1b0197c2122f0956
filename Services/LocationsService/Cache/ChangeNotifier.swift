import Logging
import PostgresNIO
import ServiceKit
import ServiceLifecycle
import Synchronization

/// Keeps replicas' caches coherent through PostgreSQL `LISTEN/NOTIFY`. A notification is only a wake-up
/// ("the log moved"); the log stays the truth.
///
/// Announcements are coalesced: at most one `NOTIFY` is in flight, and any number of appends meanwhile
/// cause one more. That keeps `NOTIFY`, which serialises committing transactions, out of the append path.
final class ChangeNotifier: Service, Sendable {
    static let channel = "locations_changed"

    private let client: PostgresClient
    private let logger: Logger
    private let onChange: @Sendable () -> Void
    private let onConnectionChange: @Sendable (Bool) -> Void

    private struct Announcing {
        var inFlight = false
        var pending = false
    }
    private let announcing = Mutex(Announcing())

    init(client: PostgresClient, logger: Logger, onChange: @escaping @Sendable () -> Void,
         onConnectionChange: @escaping @Sendable (Bool) -> Void) {
        self.client = client
        self.logger = logger
        self.onChange = onChange
        self.onConnectionChange = onConnectionChange
    }

    /// Tells every replica (this one included) that the log moved.
    func announce() {
        let start = announcing.withLock { state -> Bool in
            if state.inFlight {
                state.pending = true
                return false
            }
            state.inFlight = true
            return true
        }
        guard start else { return }
        Task {
            while true {
                do {
                    try await client.query("SELECT pg_notify(\(Self.channel), '')", logger: logger)
                } catch {
                    logger.warning("could not announce a change", metadata: ["error": "\(String(reflecting: error))"])
                }
                let again = announcing.withLock { state -> Bool in
                    if state.pending {
                        state.pending = false
                        return true
                    }
                    state.inFlight = false
                    return false
                }
                if !again { return }
            }
        }
    }

    /// Listens until shutdown.
    func run() async throws {
        try await ChannelListener(client: client, channel: Self.channel, logger: logger,
                                  onNotification: { [onChange] _ in onChange() },
                                  onConnectionChange: onConnectionChange).run()
    }
}
