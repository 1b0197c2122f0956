import Synchronization

/// Results worked out again and again from the same few keys, kept for the next time: an actor's `X-Actor`
/// header, written by the gateway and read by the service for every write. At most `capacity` are kept;
/// when full, all are forgotten at once: the keys in use (the students writing this minute) are far fewer,
/// and soon kept again.
///
/// Its lookups are inlinable, so each use is compiled for its own key and value types: left generic across
/// modules, every lookup asked the runtime for its optional's type twice (about 1,400 instructions).
public final class KeptResults<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    @usableFromInline let kept = Mutex<[Key: Value]>([:])
    @usableFromInline let capacity: Int

    public init(capacity: Int = 4096) {
        self.capacity = capacity
    }

    /// The result for `key`, worked out by `make` when it is not kept; a nil result is not kept.
    @inlinable public func value(for key: Key, making make: (Key) -> Value?) -> Value? {
        if let value = kept.withLock({ $0[key] }) { return value }
        guard let value = make(key) else { return nil }
        kept.withLock { kept in
            if kept.count >= capacity { kept.removeAll(keepingCapacity: true) }
            kept[key] = value
        }
        return value
    }

    /// The same for a result that is always there.
    @inlinable public func value(for key: Key, making make: (Key) -> Value) -> Value {
        // The optional's `make` never gives nil here, so neither does it.
        value(for: key, making: { Optional(make($0)) })!
    }

    /// How many are kept now.
    public var count: Int { kept.withLock { $0.count } }
}
