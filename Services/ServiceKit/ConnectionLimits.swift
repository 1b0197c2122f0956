import NIOCore

/// What one connection, and one client address, may hold of a service. Nothing a client sends, or fails
/// to send, keeps a connection open past these limits.
public struct ConnectionLimits: Sendable {
    /// From the first byte of a request to the end of its head. Slowloris sends one header byte every
    /// few seconds to hold a connection forever; no real client needs more than a fraction of a second.
    public var headerTimeout: Duration = .seconds(10)
    /// From a request's head to the end of its body (the largest body we take is 16 KiB).
    public var bodyTimeout: Duration = .seconds(30)
    /// With nothing read or written, a kept-alive connection is closed. Live streams write a heartbeat
    /// every 15 s, so they stay well inside it.
    public var idleTimeout: Duration = .seconds(60)
    /// Open connections from one address; the next is answered 429 and closed. A classroom behind one
    /// NAT address, each browser holding 6 connections and a live stream, stays well below it.
    public var connectionsPerAddress = Self.defaultConnectionsPerAddress
    /// Proxies whose `X-Forwarded-For` is believed; their own connections are not capped per address.
    public var trustedProxies = TrustedProxies.none

    public init() {}

    public static let defaultConnectionsPerAddress = 256
}

extension EnvironmentReader {
    /// `MAX_CONNECTIONS_PER_CLIENT` and `TRUSTED_PROXIES`, the limits a deployment may want to set.
    public func connectionLimits() throws(ConfigurationError) -> ConnectionLimits {
        var limits = ConnectionLimits()
        limits.connectionsPerAddress = try positiveInteger("MAX_CONNECTIONS_PER_CLIENT", default: ConnectionLimits.defaultConnectionsPerAddress)
        if let text = self["TRUSTED_PROXIES"] {
            guard let proxies = TrustedProxies(text) else {
                throw ConfigurationError(
                    "TRUSTED_PROXIES must list IP addresses or CIDR ranges separated by commas, such as 127.0.0.1,172.16.0.0/12; got \"\(text)\"")
            }
            limits.trustedProxies = proxies
        }
        return limits
    }

    /// A whole number of at least 1, or `fallback` when unset.
    public func positiveInteger(_ name: String, default fallback: Int) throws(ConfigurationError) -> Int {
        guard let text = self[name] else { return fallback }
        guard let value = Int(text), value > 0 else { throw ConfigurationError("\(name) must be a whole number of at least 1, got \"\(text)\"") }
        return value
    }
}
