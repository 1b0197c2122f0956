import Prometheus

#if canImport(Glibc)
import Glibc
#endif

/// The process's resident memory and open descriptors, read from `/proc/self` each time `/metrics` is
/// asked, under the names Prometheus's own process collectors use, so an operator's usual panels and alerts
/// work unchanged. They are what the soak watches for leaks: memory that stays after a crowd of live
/// streams has left, descriptors that are never closed.
struct ProcessGauges: Sendable {
    let residentMemory: Gauge
    let openDescriptors: Gauge

    init(registry: PrometheusCollectorRegistry) {
        residentMemory = registry.makeGauge(
            descriptor: MetricNameDescriptor(
                namespace: "process", metricName: "resident_memory", unitName: "bytes", helpText: "Resident memory size in bytes."))
        openDescriptors = registry.makeGauge(
            descriptor: MetricNameDescriptor(namespace: "process", metricName: "open_fds", unitName: "", helpText: "Number of open file descriptors.")
        )
    }

    func refresh() {
        if let bytes = Self.residentBytes() { residentMemory.set(Int64(bytes)) }
        if let count = Self.openDescriptorCount() { openDescriptors.set(Int64(count)) }
    }

    /// `/proc/self/statm`'s second field: resident pages.
    static func residentBytes() -> Int? {
        #if canImport(Glibc)
        let descriptor = open("/proc/self/statm", O_RDONLY)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes = [UInt8](repeating: 0, count: 128)
        let count = bytes.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        guard count > 0 else { return nil }
        let fields = bytes[..<count].split(separator: UInt8(ascii: " "))
        guard fields.count > 1, let pages = Int(String(decoding: fields[1], as: UTF8.self)) else { return nil }
        return pages * sysconf(Int32(_SC_PAGESIZE))
        #else
        return nil
        #endif
    }

    /// The entries of `/proc/self/fd` but `.`, `..` and the one the count itself opens.
    static func openDescriptorCount() -> Int? {
        #if canImport(Glibc)
        guard let directory = opendir("/proc/self/fd") else { return nil }
        defer { closedir(directory) }
        var count = 0
        while let entry = readdir(directory) {
            if entry.pointee.d_name.0 != CChar(UInt8(ascii: ".")) { count += 1 }
        }
        return count - 1
        #else
        return nil
        #endif
    }
}
