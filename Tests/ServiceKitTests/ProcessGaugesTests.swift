import Foundation
import Testing

@testable import ServiceKit

/// What `/metrics` says of the process is what the kernel says of it.
struct ProcessGaugesTests {
    @Test func theResidentMemoryIsWhatTheKernelShows() throws {
        let resident = try #require(ProcessGauges.residentBytes())
        let status = try String(contentsOfFile: "/proc/self/status", encoding: .utf8)
        let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") })
        let kilobytes = try #require(Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]))
        #expect(abs(resident / 1024 - kilobytes) < kilobytes / 4, "\(resident) bytes read, the kernel shows \(kilobytes) kB")
    }
}
