import Foundation

/// Where and how spans are exported, from the environment as the OpenTelemetry specification names its
/// settings (a `…_TRACES_…` setting before the general one): `OTEL_EXPORTER_OTLP_ENDPOINT` (spans go to
/// its `/v1/traces`) or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (as written), `…_HEADERS`, `…_TIMEOUT`,
/// `…_COMPRESSION` (`gzip` or `none`), `…_PROTOCOL` (`http/protobuf` only), `…_CERTIFICATE`,
/// `…_CLIENT_CERTIFICATE` and `…_CLIENT_KEY`; `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`; the batch
/// settings `OTEL_BSP_SCHEDULE_DELAY`, `OTEL_BSP_EXPORT_TIMEOUT`, `OTEL_BSP_MAX_QUEUE_SIZE`,
/// `OTEL_BSP_MAX_EXPORT_BATCH_SIZE`; `OTEL_SDK_DISABLED` and `OTEL_TRACES_EXPORTER=none` turn traces off.
public struct TraceExportSettings: Sendable {
    public var endpoint: String
    public var headers: [(name: String, value: String)] = []
    public var timeout = Duration.seconds(10)
    public var gzip = false
    public var scheduleDelay = Duration.seconds(5)
    public var exportTimeout = Duration.seconds(30)
    public var maxQueueSize = 2048
    public var maxExportBatchSize = 512
    /// The resource the spans are of: `service.name` first.
    public var resource: [(key: String, value: String)]
    public var certificateFile: String?
    public var clientCertificateFile: String?
    public var clientKeyFile: String?

    public init(endpoint: String, serviceName: String) {
        self.endpoint = endpoint
        resource = [("service.name", serviceName)]
    }

    /// The settings, or nil when the environment names no endpoint or turns traces off.
    public static func fromEnvironment(serviceName: String, _ environment: [String: String]) throws(ConfigurationError) -> TraceExportSettings? {
        let variables = EnvironmentReader(environment)
        func otlp(_ name: String) -> (name: String, value: String)? {
            for variable in ["OTEL_EXPORTER_OTLP_TRACES_\(name)", "OTEL_EXPORTER_OTLP_\(name)"] {
                if let value = variables[variable] { return (variable, value) }
            }
            return nil
        }
        if variables["OTEL_SDK_DISABLED"]?.lowercased() == "true" { return nil }
        switch variables["OTEL_TRACES_EXPORTER"]?.lowercased() {
        case nil, "otlp": break
        case "none": return nil
        case let other?: throw ConfigurationError("OTEL_TRACES_EXPORTER must be otlp or none, not \(other)")
        }
        let endpoint: String
        if let traces = variables["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] {
            endpoint = try checkedURL(traces, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        } else if let base = variables["OTEL_EXPORTER_OTLP_ENDPOINT"] {
            endpoint = try checkedURL(base, "OTEL_EXPORTER_OTLP_ENDPOINT") + (base.hasSuffix("/") ? "v1/traces" : "/v1/traces")
        } else {
            return nil
        }

        var settings = TraceExportSettings(endpoint: endpoint, serviceName: serviceName)
        if let (name, text) = otlp("PROTOCOL"), text != "http/protobuf" {
            throw ConfigurationError("\(name) must be http/protobuf (the only protocol spans are exported in), not \(text)")
        }
        if let (name, text) = otlp("HEADERS") { settings.headers = try pairs(text, name) }
        if let (name, text) = otlp("TIMEOUT") { settings.timeout = try milliseconds(text, name) }
        if let (name, text) = otlp("COMPRESSION") {
            switch text.lowercased() {
            case "gzip": settings.gzip = true
            case "none": settings.gzip = false
            default: throw ConfigurationError("\(name) must be gzip or none, not \(text)")
            }
        }
        settings.certificateFile = otlp("CERTIFICATE")?.value
        settings.clientCertificateFile = otlp("CLIENT_CERTIFICATE")?.value
        settings.clientKeyFile = otlp("CLIENT_KEY")?.value
        if (settings.clientCertificateFile == nil) != (settings.clientKeyFile == nil) {
            throw ConfigurationError("OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE and OTEL_EXPORTER_OTLP_CLIENT_KEY go together: set both or neither")
        }

        if let text = variables["OTEL_RESOURCE_ATTRIBUTES"] {
            for (key, value) in try pairs(text, "OTEL_RESOURCE_ATTRIBUTES") {
                if key == "service.name" { settings.resource[0].value = value } else { settings.resource.append((key, value)) }
            }
        }
        if let name = variables["OTEL_SERVICE_NAME"] { settings.resource[0].value = name }

        if let text = variables["OTEL_BSP_SCHEDULE_DELAY"] { settings.scheduleDelay = try milliseconds(text, "OTEL_BSP_SCHEDULE_DELAY") }
        if let text = variables["OTEL_BSP_EXPORT_TIMEOUT"] { settings.exportTimeout = try milliseconds(text, "OTEL_BSP_EXPORT_TIMEOUT") }
        if let text = variables["OTEL_BSP_MAX_QUEUE_SIZE"] { settings.maxQueueSize = try count(text, "OTEL_BSP_MAX_QUEUE_SIZE") }
        if let text = variables["OTEL_BSP_MAX_EXPORT_BATCH_SIZE"] {
            settings.maxExportBatchSize = try count(text, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE")
        }
        guard settings.maxExportBatchSize <= settings.maxQueueSize else {
            throw ConfigurationError(
                "OTEL_BSP_MAX_EXPORT_BATCH_SIZE (\(settings.maxExportBatchSize)) must not exceed OTEL_BSP_MAX_QUEUE_SIZE (\(settings.maxQueueSize))")
        }
        return settings
    }

    private static func checkedURL(_ text: String, _ name: String) throws(ConfigurationError) -> String {
        guard let url = URL(string: text), ["http", "https"].contains(url.scheme?.lowercased()), url.host?.isEmpty == false else {
            throw ConfigurationError("\(name) must be an http:// or https:// address (for example http://127.0.0.1:4318), not \(text)")
        }
        return text
    }

    /// `key=value,key=value`, each value percent-encoded (the specification's format for headers and
    /// resource attributes).
    private static func pairs(_ text: String, _ name: String) throws(ConfigurationError) -> [(String, String)] {
        var pairs: [(String, String)] = []
        for item in text.split(separator: ",") {
            let parts = item.split(separator: "=", maxSplits: 1)
            let key = parts.first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
            guard parts.count == 2, !key.isEmpty, let value = parts[1].trimmingCharacters(in: .whitespaces).removingPercentEncoding else {
                throw ConfigurationError("\(name) must be a list of key=value pairs separated by commas, not \(text)")
            }
            pairs.append((key, value))
        }
        return pairs
    }

    private static func milliseconds(_ text: String, _ name: String) throws(ConfigurationError) -> Duration {
        .milliseconds(try count(text, name, as: "a whole number of milliseconds"))
    }

    private static func count(_ text: String, _ name: String, as what: String = "a whole number") throws(ConfigurationError) -> Int {
        guard let value = Int(text), value > 0 else { throw ConfigurationError("\(name) must be \(what) above 0, not \(text)") }
        return value
    }
}
