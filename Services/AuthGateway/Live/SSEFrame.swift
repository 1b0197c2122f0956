import NIOCore
import OnTheMapShared
import PreparedHTTP

/// What a live stream carries, as Server-Sent Events: each change made once for every stream.
enum SSEFrame {
    static let heartbeat = ByteBuffer(string: ": heartbeat\n\n")
    /// What a stream starts with: how soon to reconnect after losing it, and a comment.
    static let opening = ByteBuffer(string: "retry: 3000\n: connected\n\n")

    /// A resume from further back than the gateway replays: the client reloads the pins, then follows on
    /// from `cursor`, the head of the log when the reload was asked for (its `id`, so that a reconnect
    /// resumes from there).
    static func reset(cursor: LogPosition) -> ByteBuffer {
        ByteBuffer(string: "id: \(cursor)\nevent: reset\ndata: {}\n\n")
    }

    /// `id`, `event` (the event type) and one `data` line of JSON.
    static func event(_ event: LocationChangeEvent) -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.writeString("id: \(event.id)\nevent: \(event.type.rawValue)\ndata: ")
        buffer.writeImmutableBuffer(event.dataJSON)
        buffer.writeString("\n\n")
        return buffer
    }
}

/// One frame in the two forms the two doors write it: its text for the router's response body, which
/// frames it itself, and a chunk of a chunked body for a stream served before the router.
struct LiveFrame: Sendable {
    let text: ByteBuffer
    let chunk: PreparedStream.Chunk

    init(_ text: ByteBuffer) {
        self.text = text
        chunk = PreparedStream.Chunk(text)
    }

    static let heartbeat = LiveFrame(SSEFrame.heartbeat)
    static let opening = LiveFrame(SSEFrame.opening)
}
