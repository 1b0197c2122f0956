import ServiceLifecycle
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Gives the memory of closed connections back to the system. glibc's malloc keeps freed memory for the
/// process to use again, so a heap grown by a crowd of connections keeps its size after they leave, until
/// `malloc_trim` gives its free pages back. So once the open connections have fallen well below their
/// peak, the heap is trimmed: looked at every few seconds, and only after a fall worth a walk through the
/// whole heap.
///
/// One trim is not enough while other traffic goes on. The crowd leaves free chunks spread through a
/// heap grown to its size; later allocations land in them and bring their pages back, up to the size the
/// crowd grew it to. So the heap is trimmed again whenever the process has grown by a tenth (8 MB at least)
/// since the last trim: a heap that is all in use gives little back, and the next trim waits until it has
/// grown by a tenth again.
public struct MemoryReturn: Service {
    /// Connections open now, and the most open at once since the last trim.
    public final class Connections: Sendable {
        private let open = Atomic<Int>(0)
        private let peak = Atomic<Int>(0)

        public init() {}

        public func opened() {
            let now = open.add(1, ordering: .relaxed).newValue
            peak.max(now, ordering: .relaxed)
        }

        public func closed() {
            open.subtract(1, ordering: .relaxed)
        }

        /// Whether they have fallen far enough from their peak; if so the peak starts again from now.
        func fellFarEnough() -> Bool {
            let now = open.load(ordering: .relaxed)
            guard peak.load(ordering: .relaxed) - now >= MemoryReturn.worthwhileFall else { return false }
            peak.store(now, ordering: .relaxed)
            return true
        }
    }

    /// The process's connections, counted by `ConnectionGuard`.
    public static let connections = Connections()

    /// A fall from the peak of at least this many connections is worth a trim: what they held is worth the
    /// walk through the whole heap a trim takes.
    static let worthwhileFall = 1_000
    /// Growth since the last trim that is worth another: this share of what the process held then, or
    /// `leastRegrowth` bytes if that is more.
    static let regrowthShare = 10
    static let leastRegrowth = 8 << 20
    let interval: Duration

    public init(interval: Duration = .seconds(5)) {
        self.interval = interval
    }

    /// glibc's `malloc_trim`, which its Swift module does not declare; nil with another C library.
    private static let mallocTrim: (@convention(c) (Int) -> Int32)? = {
        #if canImport(Glibc)
        guard let symbol = dlsym(nil, "malloc_trim") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (Int) -> Int32).self)
        #else
        return nil
        #endif
    }()

    public func run() async throws {
        // A service that returns would stop the service group: this one waits for shutdown even where
        // there is nothing to trim with.
        await cancelWhenGracefulShutdown {
            var trimmedTo = ProcessGauges.residentBytes()
            while (try? await Task.sleep(for: interval)) != nil {
                guard let trim = Self.mallocTrim else { continue }
                let fell = Self.connections.fellFarEnough()
                guard fell || Self.regrewFarEnough(from: trimmedTo, to: ProcessGauges.residentBytes()) else { continue }
                _ = trim(0)
                trimmedTo = ProcessGauges.residentBytes()
            }
        }
    }

    /// Whether the process holds enough more (`now`, resident bytes) than it did after the last trim or at
    /// start (`trimmedTo`) to try again.
    static func regrewFarEnough(from trimmedTo: Int?, to now: Int?) -> Bool {
        guard let trimmedTo, let now else { return false }
        return now - trimmedTo >= max(trimmedTo / regrowthShare, leastRegrowth)
    }
}
