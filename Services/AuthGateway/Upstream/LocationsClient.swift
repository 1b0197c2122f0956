import Foundation
import Logging
import NIOCore
import NIOHTTP1
import OnTheMapShared

/// Calls the locations-service with the internal token. Every call has a time limit; a service that is
/// down or silent becomes `GatewayError.locationsUnavailable`, never a hang.
struct LocationsClient: Sendable {
    let internalToken: String
    let http: InternalHTTPClient
    let timeout: TimeAmount
    let logger: Logger

    typealias Answer = InternalHTTPClient.Answer

    /// Headers passed through from the client to the service, unchanged.
    static let forwardedHeaders = ["Content-Type", "If-Match", "If-None-Match", InternalHeaders.idempotencyKey, "User-Agent"]

    /// The service's path for the pin list, or for one pin (its id percent-encoded whatever the client sent).
    static func locationPath(_ objectId: String?) -> String {
        "/v1/StudentLocation" + (objectId.map { "/" + ($0.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? $0) } ?? "")
    }

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
        do {
            return try await forward(method: method, path: path, query: query, headers: headers, body: body, actor: actor,
                                     requestID: requestID, timeout: timeout, on: nil).get()
        } catch {
            throw GatewayError.locationsUnavailable
        }
    }

    /// `send` on a given event loop (the client connection's, when forwarding from it): the answer arrives
    /// on that loop. Fails with `GatewayError.locationsUnavailable`.
    func forward(method: HTTPMethod, path: String, query: String?, headers: HTTPHeaders, body: ByteBuffer?,
                 actor: Actor?, requestID: String, timeout: TimeAmount? = nil, on eventLoop: (any EventLoop)?) -> EventLoopFuture<Answer> {
        var outgoing = HTTPHeaders()
        for name in Self.forwardedHeaders {
            for value in headers[name] { outgoing.add(name: name, value: value) }
        }
        outgoing.add(name: "Authorization", value: "Bearer \(internalToken)")
        outgoing.add(name: InternalHeaders.requestID, value: requestID)
        if let actor { outgoing.add(name: InternalHeaders.actor, value: actor.headerValue) }
        let target = path + (query.map { "?" + $0 } ?? "")
        return http.execute(method: method, target: target, headers: outgoing, body: body, timeout: timeout ?? self.timeout, on: eventLoop)
            .flatMapErrorThrowing { [logger] error in
                logger.warning("locations-service unavailable", metadata: ["error": "\(String(reflecting: error))", "request_id": "\(requestID)"])
                throw GatewayError.locationsUnavailable
            }
    }
}
