import HTTPTypes
import Logging
import NIOCore
import NIOHTTP1
import OnTheMapShared
import PreparedHTTP
import ServiceKit
import Tracing

/// Posting, changing and deleting a pin: the write needs a session, is refused from other sites' pages,
/// is counted against the account's and the client address's write limit, and reaches locations-service
/// as the session's account, whatever identity the body claims.
///
/// It runs on the client connection's event loop from start to end (the session from this replica's
/// cache, the service over `InternalHTTPClient` on the same loop), as a deferred answer that both doors
/// give (`LocationsProxyController` declares the routes).
struct LocationWriteForwarder: Sendable {
    let locations: LocationsClient
    let sessions: Sessions
    let latest: LatestListCache
    /// The class maps' lists kept here: a write on a map drops its own.
    let mapLists: ClassMapLists
    let limit: WriteLimit
    let trustedProxies: TrustedProxies
    /// `SESSION_COOKIE_DOMAIN`: the names under it are one site to the cross-site check.
    let siteDomain: CookieDomain?

    static let maximumBodySize = 16 * 1024

    struct Write: Sendable {
        let method: HTTPMethod
        let objectId: String?
        /// Old Parse clients test for exactly 201 on a created pin; v1 clients for exactly 200.
        let legacyParse: Bool
        /// The class map the write is on, as its path names it (nil: the default map); checked by `forward`.
        var map: String? = nil
        /// The client's headers, `Host` among them. No query: the writes take none, so none is forwarded.
        let headers: HTTPFields
        /// nil when it was longer than `maximumBodySize`: refused, once the writer is known to be allowed.
        let body: ByteBuffer?
        let requestID: String
        /// The connection's peer: the client, or a proxy in front of it.
        var peer: SocketAddress?
        /// The request's trace (`ServiceContext.topLevel` when none is recorded).
        var context: ServiceContext = .topLevel
    }

    /// A POST to a StudentLocation mount, or a PUT or DELETE of one pin (`objectId` as sent: `forward`
    /// checks it), answered once its body has arrived.
    func handling(_ request: PreparedRequest, objectId: String?, legacyParse: Bool, map: String? = nil) -> PreparedHandling {
        let requestID = RequestIDMiddleware.resolve(request.header(.requestID))
        let (method, headers) = (request.method, request.headers)
        return .deferred(
            PreparedDeferral(bodyLimit: Self.maximumBodySize) { body, eventLoop, peer, context in
                forward(
                    Write(
                        method: method, objectId: objectId, legacyParse: legacyParse, map: map, headers: headers,
                        body: body, requestID: requestID, peer: peer, context: context), on: eventLoop)
            })
    }

    func forward(_ write: Write, on eventLoop: any EventLoop) -> EventLoopFuture<PreparedResponse> {
        guard !OriginCheck.isCrossSite(write.headers, siteDomain: siteDomain) else {
            return eventLoop.makeSucceededFuture(ParseWire.refusal(.crossOrigin, requestID: write.requestID))
        }
        guard let token = SessionCookies.token(in: write.headers) else {
            return eventLoop.makeSucceededFuture(ParseWire.refusal(.notLoggedIn, requestID: write.requestID))
        }
        return account(for: token, context: write.context, on: eventLoop).flatMap { account -> EventLoopFuture<PreparedResponse> in
            guard let account else { return eventLoop.makeSucceededFuture(ParseWire.refusal(.notLoggedIn, requestID: write.requestID)) }
            let path: String
            do throws(GatewayError) {
                path = try LocationsClient.mapPrefix(write.map) + LocationsClient.locationPath(write.objectId)
            } catch {
                return eventLoop.makeSucceededFuture(ParseWire.refusal(error, requestID: write.requestID))
            }
            guard let body = write.body else {
                return eventLoop.makeSucceededFuture(ParseWire.refusal(.bodyTooLarge(limit: Self.maximumBodySize), requestID: write.requestID))
            }
            let subjects = limit.subjects(
                account: account.key, address: trustedProxies.clientAddress(peer: write.peer, headers: write.headers),
                map: write.map.flatMap(MapSlug.init))
            return counted(subjects, on: eventLoop).flatMap { decision in
                let wait: Int? = if case .wait(let seconds) = decision { seconds } else { nil }
                // Past the limit, a retried post may still get the answer to its earlier attempt: nothing new is appended.
                let replayOnly = wait != nil && write.method == .POST && write.headers[.idempotencyKey] != nil
                if let wait, !replayOnly {
                    return eventLoop.makeSucceededFuture(ParseWire.refusal(.rateLimited(retryAfter: wait), requestID: write.requestID))
                }
                return locations.forward(
                    method: write.method, path: path, query: nil, headers: write.headers, body: body,
                    actor: account.actor, requestID: write.requestID, replayOnly: replayOnly, on: eventLoop, context: write.context
                )
                .map { answer in
                    if let wait, answer.status == HTTPResponse.Status.preconditionFailed.code {
                        return ParseWire.refusal(.rateLimited(retryAfter: wait), requestID: write.requestID)
                    }
                    if answer.headers[.replayed] != nil, !replayOnly { giveBack(subjects) }
                    if (200..<300).contains(answer.status) {
                        if let slug = write.map.flatMap(MapSlug.init) { mapLists.invalidate(slug) } else { latest.invalidate() }
                    }
                    var status = HTTPResponse.Status(code: answer.status)
                    if write.legacyParse, write.method == .POST, status == .ok { status = .created }
                    return Self.relay(answer, status: status, requestID: write.requestID)
                }
            }
        }.recover { error in
            ParseWire.refusal(GatewayError.meaning(of: error, logger: locations.logger, requestID: write.requestID), requestID: write.requestID)
        }
    }

    /// Counts the write against its subjects, or answers the seconds to wait: on the event loop when that
    /// can be decided at once (a write this replica counted already), else from a task that asks the database.
    private func counted(_ subjects: [WriteLimit.Subject], on eventLoop: any EventLoop) -> EventLoopFuture<WriteDecision> {
        if let decided = limit.decideAtOnce(subjects) { return eventLoop.makeSucceededFuture(decided) }
        let promise = eventLoop.makePromise(of: WriteDecision.self)
        promise.completeWithTask { try await limit.take(subjects) }
        return promise.futureResult
    }

    /// The write was the retry of one already made: it does not count again.
    private func giveBack(_ subjects: [WriteLimit.Subject]) {
        Task { [limit, logger = locations.logger] in
            do {
                try await limit.giveBack(subjects)
            } catch {
                logger.warning("a retried write could not be given back", metadata: ["error": "\(String(reflecting: error))"])
            }
        }
    }

    /// The session's account, from this replica's cache without leaving the event loop when it holds the
    /// session (PostgreSQL is asked at most once a minute per session). Only a lookup that goes to PostgreSQL
    /// is traced, as "session lookup" under the request's trace when one is recorded: one answered from the
    /// cache did no work worth a span.
    private func account(for token: SessionToken, context: ServiceContext, on eventLoop: any EventLoop) -> EventLoopFuture<Account?> {
        switch sessions.cachedLookup(token) {
        case .live(let account):
            return eventLoop.makeSucceededFuture(account)
        case .malformed:
            return eventLoop.makeSucceededFuture(nil)
        case .unknown(let digest):
            let span = RequestTracing.traces(context) ? InstrumentationSystem.tracer.startSpan("session lookup", context: context) : nil
            let promise = eventLoop.makePromise(of: Account?.self)
            promise.completeWithTask { try await ServiceContext.withValue(span?.context ?? context) { try await sessions.account(digest: digest) } }
            guard let span else { return promise.futureResult }
            return promise.futureResult.always { _ in span.end() }
        }
    }

    /// The service's answer as the client gets it: its status, body and the headers that mean something
    /// to a client.
    static func relay(_ answer: LocationsClient.Answer, status: HTTPResponse.Status, requestID: String) -> PreparedResponse {
        var fields = HTTPFields()
        for name in [HTTPField.Name.contentType, .eTag, .cacheControl, .retryAfter] {
            if let value = answer.headers[name] { fields[name] = value }
        }
        fields[.requestID] = requestID
        return PreparedResponse(status: status, headers: fields, body: answer.body)
    }
}
