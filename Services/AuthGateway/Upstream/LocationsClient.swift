import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import OnTheMapShared

/// Calls the locations-service with the internal token. Every call has a time limit; a service that is
/// down or silent becomes `GatewayError.locationsUnavailable`, never a hang.
struct LocationsClient: Sendable {
    let baseURL: String
    let internalToken: String
    let httpClient: HTTPClient
    let timeout: TimeAmount
    let logger: Logger

    struct Answer: Sendable {
        let status: Int
        let headers: HTTPHeaders
        let body: ByteBuffer
    }

    /// Headers passed through from the client to the service, unchanged.
    static let forwardedHeaders = ["Content-Type", "If-Match", "If-None-Match", InternalHeaders.idempotencyKey, "User-Agent"]

    /// One page of the service's change feed after `cursor` (`now` for the head), waiting up to
    /// `wait` for something to happen. Without `events`, the page lists none and only moves the cursor.
    func changes(after cursor: String, wait: Int, events: Bool = true, requestID: String) async throws -> LocationChangePage {
        let answer = try await send(method: .GET, path: "/v1/StudentLocation/changes",
                                    query: "after=\(cursor)&wait=\(wait)" + (events ? "" : "&events=false"), headers: [:], body: nil, actor: nil,
                                    requestID: requestID, timeout: timeout + .seconds(Int64(wait)))
        guard answer.status == 200, let page = try? JSONDecoder().decode(LocationChangePage.self, from: Data(answer.body.readableBytesView)) else {
            logger.warning("unexpected change feed answer", metadata: ["status": "\(answer.status)"])
            throw GatewayError.locationsUnavailable
        }
        return page
    }

    func send(method: HTTPMethod, path: String, query: String?, headers: HTTPHeaders, body: ByteBuffer?,
              actor: Actor?, requestID: String, timeout: TimeAmount? = nil) async throws -> Answer {
        var request = HTTPClientRequest(url: baseURL + path + (query.map { "?" + $0 } ?? ""))
        request.method = method
        for name in Self.forwardedHeaders {
            for value in headers[name] { request.headers.add(name: name, value: value) }
        }
        request.headers.replaceOrAdd(name: "Authorization", value: "Bearer \(internalToken)")
        request.headers.replaceOrAdd(name: InternalHeaders.requestID, value: requestID)
        if let actor { request.headers.replaceOrAdd(name: InternalHeaders.actor, value: actor.headerValue) }
        if let body { request.body = .bytes(body) }
        do {
            let response = try await httpClient.execute(request, timeout: timeout ?? self.timeout)
            let body = try await response.body.collect(upTo: 8 << 20)
            return Answer(status: Int(response.status.code), headers: response.headers, body: body)
        } catch {
            logger.warning("locations-service unavailable", metadata: ["error": "\(String(reflecting: error))", "request_id": "\(requestID)"])
            throw GatewayError.locationsUnavailable
        }
    }
}
