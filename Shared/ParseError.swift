import NIOCore

/// The Parse-style error body every location route answers with: `{"code":101,"error":"Object not found."}`.
public struct ParseError: Error, Hashable, Sendable, Codable {
    /// Parse's own numbering, which old clients may switch on.
    public enum Code: Int, Sendable, Codable {
        case internalServerError = 1
        case connectionFailed = 100
        case objectNotFound = 101
        case invalidQuery = 102
        case invalidJSON = 107
        case incorrectType = 111
        case operationForbidden = 119
        case duplicateValue = 137
        case validationFailed = 142
        case requestLimitExceeded = 155
        case invalidSessionToken = 209
    }

    public var code: Code
    public var error: String

    public init(_ code: Code, _ error: String) {
        self.code = code
        self.error = error
    }

    public var json: ByteBuffer {
        var writer = JSONWriter()
        writer.beginObject()
        writer.field("code", code.rawValue)
        writer.field("error", error)
        writer.endObject()
        return writer.buffer
    }
}
