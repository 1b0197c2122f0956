import Testing

@testable import ServiceKit

/// Whose `X-Forwarded-For` and `X-Forwarded-Proto` are believed.
@Suite struct TrustedProxiesTests {
    @Test func addressesAndRangesOfBothFamiliesAreRecognised() throws {
        let proxies = try #require(TrustedProxies("127.0.0.1, 172.16.0.0/12, fd00::/8"))
        #expect(proxies.contains("127.0.0.1"))
        #expect(!proxies.contains("127.0.0.2"))
        #expect(proxies.contains("172.31.255.1"))
        #expect(!proxies.contains("172.32.0.1"))
        #expect(proxies.contains("fd12::1"))
        #expect(!proxies.contains("fe80::1"))
        #expect(!proxies.contains("not an address"))
    }

    @Test func malformedListsAreRefused() {
        #expect(TrustedProxies("") == nil)
        #expect(TrustedProxies("127.0.0.1/33") == nil)
        #expect(TrustedProxies("localhost") == nil)
        #expect(TrustedProxies("10.0.0.0/x") == nil)
    }

    @Test func theHeaderOfAPeerThatIsNoProxyOfOursIsIgnored() throws {
        let proxies = try #require(TrustedProxies("10.0.0.1"))
        #expect(proxies.clientAddress(peer: "203.0.113.9", forwardedFor: ["198.51.100.7"]) == "203.0.113.9")
        #expect(TrustedProxies.none.clientAddress(peer: "127.0.0.1", forwardedFor: ["198.51.100.7"]) == "127.0.0.1")
    }

    @Test func behindTrustedProxiesTheNearestOtherAddressIsTheClient() throws {
        let proxies = try #require(TrustedProxies("10.0.0.0/8"))
        // The client wrote a forged first entry; our own proxies appended what they saw after it.
        #expect(proxies.clientAddress(peer: "10.0.0.1", forwardedFor: ["6.6.6.6, 198.51.100.7, 10.0.0.2"]) == "198.51.100.7")
        #expect(proxies.clientAddress(peer: "10.0.0.1", forwardedFor: ["6.6.6.6", "198.51.100.7"]) == "198.51.100.7")
        // Garbage stops the walk: what lies beyond it cannot be told apart from a forgery.
        #expect(proxies.clientAddress(peer: "10.0.0.1", forwardedFor: ["198.51.100.7, junk"]) == "10.0.0.1")
        #expect(proxies.clientAddress(peer: "10.0.0.1", forwardedFor: []) == "10.0.0.1")
    }

    @Test func theSchemeIsATrustedProxysWordAndNobodyElses() throws {
        let proxies = try #require(TrustedProxies("10.0.0.0/8"))
        #expect(proxies.isHTTPS(peer: "10.0.0.1", forwardedProto: ["https"], direct: false))
        #expect(proxies.isHTTPS(peer: "10.0.0.1", forwardedProto: ["HTTPS"], direct: false))
        #expect(!proxies.isHTTPS(peer: "10.0.0.1", forwardedProto: ["http"], direct: true))
        // Anyone else is on the connection they made to us.
        #expect(!proxies.isHTTPS(peer: "203.0.113.9", forwardedProto: ["https"], direct: false))
        #expect(proxies.isHTTPS(peer: "203.0.113.9", forwardedProto: ["http"], direct: true))
        #expect(!TrustedProxies.none.isHTTPS(peer: "127.0.0.1", forwardedProto: ["https"], direct: false))
        // Silence or a word we do not know leaves the connection's own scheme.
        #expect(!proxies.isHTTPS(peer: "10.0.0.1", forwardedProto: [], direct: false))
        #expect(!proxies.isHTTPS(peer: "10.0.0.1", forwardedProto: ["wss"], direct: false))
    }

    @Test func theNearestProxysSchemeIsTheLastOneInTheHeader() throws {
        let proxies = try #require(TrustedProxies("10.0.0.0/8"))
        // The client wrote the first; our proxy appended what it saw.
        #expect(!proxies.isHTTPS(peer: "10.0.0.1", forwardedProto: ["https, http"], direct: false))
        #expect(!proxies.isHTTPS(peer: "10.0.0.1", forwardedProto: ["https", "http"], direct: false))
        #expect(proxies.isHTTPS(peer: "10.0.0.1", forwardedProto: ["http , https "], direct: false))
    }
}
