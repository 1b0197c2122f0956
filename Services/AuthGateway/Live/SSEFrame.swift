import NIOCore
import OnTheMapShared

/// What a live stream carries, as Server-Sent Events: each change made once for every stream.
enum SSEFrame {
    static let heartbeat = ByteBuffer(string: ": heartbeat\n\n")

    /// `id`, `event` (the event type) and one `data` line of JSON.
    static func event(_ event: LocationChangeEvent) -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.writeString("id: \(event.id)\nevent: \(event.type.rawValue)\ndata: ")
        buffer.writeImmutableBuffer(event.dataJSON)
        buffer.writeString("\n\n")
        return buffer
    }
}
