import Logging

/// The messages a logger was given, kept so that a test waits for the one that says a step was reached
/// (a wait begun, a retry scheduled) instead of guessing how long the step takes.
public final class CapturedLog: Sendable {
    private let messages = Watched<[String]>([])

    public init() {}

    /// A logger whose messages, at `level` and above, are kept here.
    public func logger(_ label: String = "captured", level: Logger.Level = .trace) -> Logger {
        var logger = Logger(label: label) { _ in Handler(messages: self.messages) }
        logger.logLevel = level
        return logger
    }

    public var all: [String] { messages.value }

    /// Whether a message containing `text` was logged, now or within `limit`.
    public func contains(_ text: String, within limit: Duration) async -> Bool {
        await messages.wait(within: limit) { $0.contains { $0.contains(text) } }
    }

    private struct Handler: LogHandler {
        let messages: Watched<[String]>
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(
            level: Logger.Level, message: Logger.Message, metadata: Logger.Metadata?, source: String, file: String, function: String,
            line: UInt
        ) {
            messages.update { $0.append(message.description) }
        }
    }
}
