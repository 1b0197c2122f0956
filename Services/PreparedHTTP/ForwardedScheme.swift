import Foundation
import NIOCore

/// The scheme a client used to reach the proxy in front of us, as that proxy says in `X-Forwarded-Proto`.
/// Only the proxies we were told to trust are believed (`trusts`), as for the client's address: anyone
/// else could claim HTTPS to be given what only HTTPS clients get.
public struct ForwardedScheme: Sendable {
    public static let header = "X-Forwarded-Proto"

    /// Whether the peer of a connection is a proxy whose word is taken.
    public let trusts: @Sendable (SocketAddress?) -> Bool

    public init(trusts: @escaping @Sendable (SocketAddress?) -> Bool) {
        self.trusts = trusts
    }

    /// Whether the nearest proxy says its client came over HTTPS: the last value of the header (a proxy that
    /// appends rather than replaces puts its own last), `https` or `http` in any case; nil when it says
    /// nothing, or nothing of the two.
    public static func isHTTPS(_ values: [some StringProtocol]) -> Bool? {
        guard let last = values.last?.split(separator: ",").last else { return nil }
        switch last.trimmingCharacters(in: .whitespaces).lowercased() {
        case "https": return true
        case "http": return false
        default: return nil
        }
    }
}
