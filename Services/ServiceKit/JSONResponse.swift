import Hummingbird
import NIOCore

extension Response {
    /// A JSON response from bytes that are already encoded.
    public static func json(_ buffer: ByteBuffer, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) -> Response {
        var fields = headers
        fields[.contentType] = "application/json"
        return Response(status: status, headers: fields, body: .init(byteBuffer: buffer))
    }
}
