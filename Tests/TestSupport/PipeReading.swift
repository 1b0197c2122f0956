import Foundation

#if canImport(Glibc)
import Glibc
#endif

extension Pipe {
    /// Everything written to the pipe until its writing end closes.
    ///
    /// Read with `read(2)`, again whenever a signal interrupts it: Foundation's `readDataToEndOfFile` and
    /// `availableData` stop the whole process with a fatal error on `EINTR` ("Interrupted system call"), and a
    /// test process gets it, with children exiting around it: two test suites' process, run whole at once,
    /// crashed so here.
    public func readUntilEnd() -> Data {
        var data = Data()
        while case let chunk = nextChunk(), !chunk.isEmpty { data.append(chunk) }
        return data
    }

    /// What the next `read(2)` brings, up to 64 kB, waiting for it; empty once the writing end has closed.
    public func nextChunk() -> Data {
        let descriptor = fileHandleForReading.fileDescriptor
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count >= 0 { return Data(buffer[0..<count]) }
            // A failure other than an interruption (the descriptor closed under it) ends the reading too.
            if errno != EINTR { return Data() }
        }
    }
}
