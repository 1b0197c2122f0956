import Synchronization

/// A reference stored once and read from then on without a lock, by any thread: what a value made on first
/// use (a coded form of the latest list, a route's timers) is kept in when every answer reads it.
///
/// Synchronization's `AtomicLazyReference` does the same, but its reads are not specialised into this module:
/// each one looks up generic metadata at run time, about 700 instructions (callgrind), more than the
/// lock it replaces. Here the reference's bits sit in an `Atomic<Int>`, and the code is specialised for
/// each type it holds.
final class PublishedOnce<Instance: AnyObject & Sendable>: Sendable {
    /// The stored instance's address, retained; 0 until one is stored.
    private let address = Atomic<Int>(0)

    init() {}

    /// The instance stored, if one is.
    func load() -> Instance? {
        guard let pointer = UnsafeRawPointer(bitPattern: address.load(ordering: .acquiring)) else { return nil }
        return Unmanaged<Instance>.fromOpaque(pointer).takeUnretainedValue()
    }

    /// Stores `instance` unless one was stored first, and returns whichever is stored.
    func storeIfNil(_ instance: Instance) -> Instance {
        let retained = Unmanaged.passRetained(instance)
        let (stored, found) = address.compareExchange(
            expected: 0, desired: Int(bitPattern: retained.toOpaque()), successOrdering: .acquiringAndReleasing, failureOrdering: .acquiring)
        if stored { return instance }
        retained.release()
        return Unmanaged<Instance>.fromOpaque(UnsafeRawPointer(bitPattern: found)!).takeUnretainedValue()
    }

    deinit {
        if let pointer = UnsafeRawPointer(bitPattern: address.load(ordering: .acquiring)) { Unmanaged<Instance>.fromOpaque(pointer).release() }
    }
}
