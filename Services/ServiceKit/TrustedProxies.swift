import Foundation
import HTTPTypes
import NIOCore
import PreparedHTTP

/// The proxies (a load balancer, Docker's port publishing) whose `X-Forwarded-For` tells who the client
/// is. Anyone else's header is ignored: a client could write any address into it.
public struct TrustedProxies: Sendable, Equatable {
    /// An address range: the first `prefix` bits of `bytes` (4 bytes for IPv4, 16 for IPv6).
    struct Range: Sendable, Equatable {
        let bytes: [UInt8]
        let prefix: Int

        func contains(_ address: [UInt8]) -> Bool {
            guard address.count == bytes.count else { return false }
            var remaining = prefix
            for (a, b) in zip(address, bytes) where remaining > 0 {
                let bits = min(remaining, 8)
                let mask = UInt8(truncatingIfNeeded: 0xFF << (8 - bits))
                if a & mask != b & mask { return false }
                remaining -= bits
            }
            return true
        }
    }

    let ranges: [Range]

    public static let none = TrustedProxies(ranges: [])

    public var isEmpty: Bool { ranges.isEmpty }

    init(ranges: [Range]) { self.ranges = ranges }

    /// Comma-separated addresses and CIDR ranges: `127.0.0.1, 172.16.0.0/12, ::1`. Nil when one does not parse.
    public init?(_ text: String) {
        var ranges: [Range] = []
        for item in text.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where !item.isEmpty {
            let parts = item.split(separator: "/", maxSplits: 1)
            guard let bytes = Self.bytes(of: String(parts[0])) else { return nil }
            var prefix = bytes.count * 8
            if parts.count == 2 {
                guard let bits = Int(parts[1]), (0...prefix).contains(bits) else { return nil }
                prefix = bits
            }
            ranges.append(Range(bytes: bytes, prefix: prefix))
        }
        guard !ranges.isEmpty else { return nil }
        self.ranges = ranges
    }

    public func contains(_ address: String) -> Bool {
        guard !ranges.isEmpty, let bytes = Self.bytes(of: address) else { return false }
        return ranges.contains { $0.contains(bytes) }
    }

    /// Whose `X-Forwarded-Proto` the door before the router believes: these proxies'; nil when there are none.
    public var forwardedScheme: ForwardedScheme? {
        guard !isEmpty else { return nil }
        return ForwardedScheme { [self] peer in peer?.ipAddress.map(contains) ?? false }
    }

    /// Whether the client reached us over HTTPS: from a trusted proxy, as its `X-Forwarded-Proto` says
    /// (`direct` when it says nothing we know); from anyone else, `direct`, how they reached us.
    public func isHTTPS(peer: String?, forwardedProto: [String], direct: Bool) -> Bool {
        guard let peer, contains(peer) else { return direct }
        return ForwardedScheme.isHTTPS(forwardedProto) ?? direct
    }

    /// The client's address: the socket's peer, or, when the peer is a trusted proxy, the nearest address in
    /// `X-Forwarded-For` that is not one of ours (each proxy appends the address it was reached from).
    public func clientAddress(peer: String?, forwardedFor: [String]) -> String? {
        guard let peer, contains(peer) else { return peer }
        let hops = forwardedFor.flatMap { $0.split(separator: ",") }.map { $0.trimmingCharacters(in: .whitespaces) }
        var client = peer
        for hop in hops.reversed() {
            guard Self.bytes(of: hop) != nil else { break }
            client = hop
            if !contains(hop) { break }
        }
        return client
    }

    /// The address's bytes in network order, or nil when it is not an IPv4 or IPv6 address.
    static func bytes(of text: String) -> [UInt8]? {
        guard text.utf8.count < 64 else { return nil }
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            return withUnsafeBytes(of: &v4) { Array($0) }
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 {
            return withUnsafeBytes(of: &v6) { Array($0) }
        }
        return nil
    }
}

extension TrustedProxies {
    /// The client's address of a request answered before the router: the connection's peer, or what a
    /// trusted proxy there says of it (`forwardedFor`: the request's `X-Forwarded-For` lines, joined).
    public func clientAddress(peer: SocketAddress?, forwardedFor: String?) -> String? {
        let address = peer?.ipAddress
        return isEmpty ? address : clientAddress(peer: address, forwardedFor: forwardedFor.map { [$0] } ?? [])
    }

    public static let forwardedFor = HTTPField.Name("X-Forwarded-For")!
}
