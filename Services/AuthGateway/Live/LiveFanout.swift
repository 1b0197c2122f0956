import NIOCore
import Prometheus
import Synchronization

/// What a live stream asks of whoever feeds it: to be handed each change from now on (nil when its client's
/// address already has `streamsPerAddress` streams open), and to be let go.
protocol LiveSubscriptions: Sendable {
    var streamsPerAddress: Int { get }
    func subscribe(_ stream: any LiveStream, address: String?, on loop: any EventLoop) -> UInt64?
    func unsubscribe(_ id: UInt64, on loop: any EventLoop)
}

/// The live streams of one map, by the event loop each is served on: a message reaches the streams of a
/// loop with one hop to that loop, and is framed once for all of them.
final class LiveFanout: LiveSubscriptions {
    private struct Subscribers {
        /// The streams, by the event loop they are served on (one group per loop, kept once made).
        var loops: [ObjectIdentifier: LoopStreams] = [:]
        /// Every open stream, with its client's address.
        var members: [UInt64: String?] = [:]
        var perAddress: [String: Int] = [:]
    }

    /// Streams open at once from one client address.
    let streamsPerAddress: Int
    private let subscribers = Mutex(Subscribers())
    private let nextID = Atomic<UInt64>(0)
    private let openStreams: Gauge?

    init(streamsPerAddress: Int, openStreams: Gauge? = nil) {
        self.streamsPerAddress = streamsPerAddress
        self.openStreams = openStreams
    }

    /// Hands `stream`, from a client at `address` and served on `loop`, every message from now on, until
    /// `unsubscribe` (or `endAll`). Nil when that address already has `streamsPerAddress` streams open.
    func subscribe(_ stream: any LiveStream, address: String?, on loop: any EventLoop) -> UInt64? {
        let id = nextID.add(1, ordering: .relaxed).newValue
        let joined: (LoopStreams, Int)? = subscribers.withLock { subscribers in
            if let address {
                let open = subscribers.perAddress[address, default: 0]
                guard open < streamsPerAddress else { return nil }
                subscribers.perAddress[address] = open + 1
            }
            subscribers.members[id] = address
            let key = ObjectIdentifier(loop)
            let group = subscribers.loops[key] ?? LoopStreams(loop: loop)
            subscribers.loops[key] = group
            return (group, subscribers.members.count)
        }
        guard let (group, count) = joined else { return nil }
        openStreams?.set(Double(count))
        group.onLoop { $0.add(id, stream) }
        return id
    }

    /// Lets a stream go; once is enough, more is harmless.
    func unsubscribe(_ id: UInt64, on loop: any EventLoop) {
        let left: (LoopStreams?, Int)? = subscribers.withLock { subscribers in
            guard let address = subscribers.members.removeValue(forKey: id) else { return nil }
            if let address {
                let open = subscribers.perAddress[address, default: 1] - 1
                subscribers.perAddress[address] = open > 0 ? open : nil
            }
            return (subscribers.loops[ObjectIdentifier(loop)], subscribers.members.count)
        }
        guard let (group, count) = left else { return }
        openStreams?.set(Double(count))
        group?.onLoop { $0.remove(id) }
    }

    var subscriberCount: Int { subscribers.withLock { $0.members.count } }

    /// One hop to each event loop, which hands the message to the streams it serves.
    func broadcast(_ message: LiveFeed.Message) {
        for group in subscribers.withLock({ Array($0.loops.values) }) {
            group.loop.execute { group.deliver(message) }
        }
    }

    /// Ends every stream; returns once their connections have closed (each within
    /// `PreparedStream.finishingLimit`).
    func endAll() async {
        let ended = subscribers.withLock { Array($0.loops.values) }.map { group in group.loop.flatSubmit { group.endAll() } }
        for closed in ended { try? await closed.get() }
    }
}
