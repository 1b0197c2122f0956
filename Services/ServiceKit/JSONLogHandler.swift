import Foundation
import Logging
import OnTheMapShared
import Synchronization

/// `LOG_FORMAT=json`: each log line one JSON object on standard error, for a log pipeline to parse and join
/// across the two services: `time`, `level`, `service`, `message`, `source` (the module that logged), then
/// every metadata item as a string field (`request_id` among them, the same in both services for one
/// request). `LOG_FORMAT=text`, the default, keeps swift-log's own lines.
public struct JSONLogHandler: LogHandler {
    public var logLevel: Logger.Level = .info
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    let service: String

    public init(service: String, metadataProvider: Logger.MetadataProvider? = nil) {
        self.service = service
        self.metadataProvider = metadataProvider
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    static let fixedFields: Set<String> = ["time", "level", "service", "message", "source"]

    /// The line for one log event, without its newline.
    func line(_ event: LogEvent, at time: Timestamp) -> String {
        var fields = metadata
        if let provided = metadataProvider?.get() { fields.merge(provided) { _, new in new } }
        if let given = event.metadata { fields.merge(given) { _, new in new } }
        var json = JSONWriter()
        json.beginObject()
        json.field("time", time.iso8601)
        json.field("level", event.level.rawValue)
        json.field("service", service)
        json.field("message", event.message.description)
        json.field("source", event.source)
        for (key, value) in fields.sorted(by: { $0.key < $1.key }) where !Self.fixedFields.contains(key) {
            json.field(key, value.description)
        }
        json.endObject()
        return json.string
    }

    public func log(event: LogEvent) {
        let text = line(event, at: .now()) + "\n"
        // One write per line, under a lock, so that lines from several threads never interleave.
        Self.output.withLock { _ in FileHandle.standardError.write(Data(text.utf8)) }
    }

    private static let output = Mutex(())
}

/// How the logs are written, from `LOG_FORMAT`.
public enum LogFormat: String, Sendable {
    case text
    case json

    public static func fromEnvironment(_ environment: [String: String]) throws(ConfigurationError) -> LogFormat {
        guard let text = environment["LOG_FORMAT"] else { return .text }
        guard let format = LogFormat(rawValue: text.lowercased()) else {
            throw ConfigurationError("LOG_FORMAT must be text or json; got \"\(text)\"")
        }
        return format
    }

    private static let bootstrapped = Atomic<Bool>(false)

    /// Sets the process's log handler for `service` once; the first call decides (swift-log allows one).
    public func bootstrap(service: String) {
        guard self == .json, !Self.bootstrapped.exchange(true, ordering: .relaxed) else { return }
        LoggingSystem.bootstrap { _ in JSONLogHandler(service: service) }
        AccessLog.start()
    }
}
