import Logging

/// Reads settings from the environment, each failure one clear line naming the variable.
public struct EnvironmentReader: Sendable {
    public let values: [String: String]

    public init(_ values: [String: String]) { self.values = values }

    /// The value, or nil when unset or empty.
    public subscript(_ name: String) -> String? {
        guard let value = values[name], !value.isEmpty else { return nil }
        return value
    }

    public func required(_ name: String, example: String) throws(ConfigurationError) -> String {
        guard let value = self[name] else { throw ConfigurationError("\(name) is not set (for example \(example))") }
        return value
    }

    public func database() throws(ConfigurationError) -> DatabaseURL {
        try DatabaseURL(required("DATABASE_URL", example: "postgres://onthemap@127.0.0.1:5432/onthemap"))
    }

    public func port(default fallback: Int) throws(ConfigurationError) -> Int {
        guard let text = self["PORT"] else { return fallback }
        guard let value = Int(text), (1...65535).contains(value) else {
            throw ConfigurationError("PORT must be a number from 1 to 65535, got \"\(text)\"")
        }
        return value
    }

    public func internalToken() throws(ConfigurationError) -> String {
        let token = self["INTERNAL_TOKEN"] ?? ""
        guard token.utf8.count >= 16 else {
            throw ConfigurationError("INTERNAL_TOKEN must be set to a shared secret of at least 16 characters")
        }
        return token
    }

    public func logLevel() throws(ConfigurationError) -> Logger.Level {
        guard let text = self["LOG_LEVEL"] else { return .info }
        guard let level = Logger.Level(rawValue: text.lowercased()) else {
            throw ConfigurationError("LOG_LEVEL must be one of trace, debug, info, notice, warning, error, critical; got \"\(text)\"")
        }
        return level
    }
}
