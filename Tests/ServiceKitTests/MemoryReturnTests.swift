import Testing

@testable import ServiceKit

/// When a service gives freed memory back: after a fall of open connections from their peak large enough
/// to be worth a trim, once per fall; and again whenever the process has grown back by a tenth.
struct MemoryReturnTests {
    @Test func aFallOfAThousandConnectionsFromTheirPeakIsTrimmedOnce() {
        let connections = MemoryReturn.Connections()
        for _ in 0..<1_500 { connections.opened() }
        for _ in 0..<(MemoryReturn.worthwhileFall - 1) { connections.closed() }
        #expect(!connections.fellFarEnough(), "a fall of 999 is not worth a walk through the heap")
        connections.closed()
        #expect(connections.fellFarEnough())
        #expect(!connections.fellFarEnough(), "the peak starts again from where the connections are now")
        for _ in 0..<(1_500 - MemoryReturn.worthwhileFall) { connections.closed() }
        #expect(!connections.fellFarEnough())
        for _ in 0..<2_000 { connections.opened() }
        for _ in 0..<2_000 { connections.closed() }
        #expect(connections.fellFarEnough(), "a burst that came and went between two looks still counts")
    }

    @Test func aProcessThatGrewByATenthSinceItsLastTrimIsTrimmedAgain() {
        let megabyte = 1 << 20
        #expect(!MemoryReturn.regrewFarEnough(from: 100 * megabyte, to: 109 * megabyte))
        #expect(MemoryReturn.regrewFarEnough(from: 100 * megabyte, to: 110 * megabyte))
        #expect(!MemoryReturn.regrewFarEnough(from: 20 * megabyte, to: 27 * megabyte), "8 MB at least, whatever a tenth is")
        #expect(MemoryReturn.regrewFarEnough(from: 20 * megabyte, to: 28 * megabyte))
        #expect(!MemoryReturn.regrewFarEnough(from: 100 * megabyte, to: 90 * megabyte))
        #expect(!MemoryReturn.regrewFarEnough(from: nil, to: 500 * megabyte), "without /proc, never")
    }
}
