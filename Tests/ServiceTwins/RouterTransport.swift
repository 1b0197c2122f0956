#if DEBUG
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import NIOHTTP1
import OnTheMapClient

/// A client's calls handed to a router in memory (`withGatewayRouter`'s), as they would cross a socket:
/// the path and query of the request's URL, its headers and body, and the whole answer back.
struct RouterTransport: GatewayTransport {
    let router: any TestClientProtocol

    func exchange(_ request: OnTheMapClient.Request, timeout: Duration) async throws -> OnTheMapClient.Answer {
        guard let url = URLComponents(string: request.url), let method = HTTPRequest.Method(request.method.rawValue) else {
            throw RouterTransportError(reason: "not a request the router can take: \(request.method.rawValue) \(request.url)")
        }
        var target = url.percentEncodedPath
        if let query = url.percentEncodedQuery { target += "?" + query }
        var fields = HTTPFields()
        for (name, value) in request.headers {
            guard let fieldName = HTTPField.Name(name) else { throw RouterTransportError(reason: "not a header name: \(name)") }
            fields.append(HTTPField(name: fieldName, value: value))
        }
        let response = try await router.executeRequest(
            uri: target, method: method, headers: fields, body: request.body.map { ByteBuffer(bytes: $0) })
        return OnTheMapClient.Answer(
            status: response.status.code, headers: HTTPHeaders(response.headers), body: Array(response.body.readableBytesView))
    }
}

extension HTTPHeaders {
    /// An answer's fields, as a client on the far side of a socket would read them.
    init(_ fields: HTTPFields) {
        self.init()
        for field in fields { add(name: field.name.canonicalName, value: field.value) }
    }
}

struct RouterTransportError: Error, CustomStringConvertible {
    let reason: String
    var description: String { reason }
}
#endif
