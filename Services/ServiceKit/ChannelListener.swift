import Logging
import PostgresNIO
import ServiceLifecycle

/// `LISTEN` on one PostgreSQL channel for as long as the application runs, reconnecting with a growing
/// pause when the database goes away. What a replica caches because of these notifications can be trusted
/// only while `onConnectionChange` last said `true`: anything sent while nobody listened is lost.
public struct ChannelListener: Service {
    public let client: PostgresClient
    public let channel: String
    public let logger: Logger
    public let onNotification: @Sendable (_ payload: String) -> Void
    /// Awaited before any notification is handed on, so what it does on `true` (a check of what was cached
    /// while nobody listened) comes before the notifications sent during it.
    public let onConnectionChange: @Sendable (_ listening: Bool) async -> Void

    public init(
        client: PostgresClient, channel: String, logger: Logger,
        onNotification: @escaping @Sendable (_ payload: String) -> Void,
        onConnectionChange: @escaping @Sendable (_ listening: Bool) async -> Void
    ) {
        self.client = client
        self.channel = channel
        self.logger = logger
        self.onNotification = onNotification
        self.onConnectionChange = onConnectionChange
    }

    public func run() async throws {
        await cancelWhenGracefulShutdown {
            var pause = Duration.milliseconds(200)
            while !Task.isCancelled {
                do {
                    try await client.withConnection { connection in
                        try await connection.listen(on: channel) { notifications in
                            await onConnectionChange(true)
                            pause = .milliseconds(200)
                            for try await notification in notifications {
                                onNotification(notification.payload)
                            }
                        }
                    }
                } catch {
                    if Task.isCancelled { break }
                    logger.warning("listener of \(channel) lost its connection; retrying", metadata: ["error": "\(String(reflecting: error))"])
                }
                await onConnectionChange(false)
                try? await Task.sleep(for: pause)
                pause = min(pause * 2, .seconds(5))
            }
        }
    }
}
