import NIOCore

/// Who holds a connection once its first turn has come. A stream opened on it keeps its connection with no
/// task of its own; everything else is read by the task Hummingbird's server runs for the connection until
/// it closes (`HTTP1ServerChannel.handle`).
public enum ConnectionHolder: Sendable {
    case stream
    case router
}

/// A handler of an HTTP/1 connection (one of `HTTP1ServerChannel`'s) that settles who holds its connection:
/// `holder` completes at the connection's first turn. A connection none of whose handlers does so is the
/// router's.
public protocol ConnectionHolding: ChannelHandler {
    /// Set once the handler is in a pipeline.
    var holder: EventLoopFuture<ConnectionHolder>? { get }
}
