import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore

/// What a test needs back from a response: status, headers and the body as text.
public struct Reply: Sendable {
    public let status: HTTPResponse.Status
    public let headers: HTTPFields
    public let body: String

    public init(status: HTTPResponse.Status, headers: HTTPFields, body: String) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The body's JSON object, after the session API's 5-byte prefix when there is one.
    public var json: [String: Any] {
        let text = body.hasPrefix(")]}'\n") ? String(body.dropFirst(5)) : body
        return (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? [:]
    }

    /// The cookies the response sets, by name.
    public var cookies: [String: String] {
        Dictionary(
            headers[values: .setCookie].compactMap { line -> (String, String)? in
                let pair = line.split(separator: ";")[0].split(separator: "=", maxSplits: 1)
                return pair.count == 2 ? (String(pair[0]), String(pair[1])) : nil
            }, uniquingKeysWith: { $1 })
    }
}

extension TestClientProtocol {
    /// One request with a text body, its answer as a `Reply`.
    public func reply(_ method: HTTPRequest.Method, _ uri: String, headers: HTTPFields, body: String?) async throws -> Reply {
        try await execute(uri: uri, method: method, headers: headers, body: body.map { ByteBuffer(string: $0) }) { response in
            Reply(status: response.status, headers: response.headers, body: String(buffer: response.body))
        }
    }
}
