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
/// give (`LocationsProxyController` declares the routes). A class: each step of a write holds the forwarder
/// (a closure for its body, one for the service's answer), and a reference is one count to take where a
/// copy of its seven parts was a dozen.
final class LocationWriteForwarder: Sendable {
    let locations: LocationsClient
    let sessions: Sessions
    let latest: LatestListCache
    /// The class maps' lists kept here: a write on a map drops its own.
    let mapLists: ClassMapLists
    let limit: WriteLimit
    let trustedProxies: TrustedProxies
    /// `SESSION_COOKIE_DOMAIN`: the names under it are one site to the cross-site check.
    let siteDomain: CookieDomain?

    init(
        locations: LocationsClient, sessions: Sessions, latest: LatestListCache, mapLists: ClassMapLists, limit: WriteLimit,
        trustedProxies: TrustedProxies, siteDomain: CookieDomain?
    ) {
        self.locations = locations
        self.sessions = sessions
        self.latest = latest
        self.mapLists = mapLists
        self.limit = limit
        self.trustedProxies = trustedProxies
        self.siteDomain = siteDomain
    }

    static let maximumBodySize = 16 * 1024

    struct Write: Sendable {
        let method: HTTPMethod
        let objectId: String?
        /// Old Parse clients test for exactly 201 on a created pin; v1 clients for exactly 200.
        let legacyParse: Bool
        /// The class map the write is on, as its path names it (nil: the default map); checked by `forward`.
        var map: String? = nil
        /// Sent from another site's page (`OriginCheck`).
        let crossSite: Bool
        /// The session the request presents, if any.
        let token: SessionToken?
        /// Whether the client sent an `Idempotency-Key`.
        let retriable: Bool
        /// `X-Forwarded-For`'s lines, joined, for `TrustedProxies`.
        let forwardedFor: String?
        /// The client's headers that reach the service (`LocationsClient.forwardedHeaders`). No query: the
        /// writes take none, so none is forwarded.
        let headers: HTTPFields
        /// nil when it was longer than `maximumBodySize`: refused, once the writer is known to be allowed.
        var body: ByteBuffer?
        let requestID: String
        /// The connection's peer: the client, or a proxy in front of it.
        var peer: SocketAddress?
        /// The request's trace (`ServiceContext.topLevel` when none is recorded).
        var context: ServiceContext = .topLevel

        /// What the write needs of the request's head, each header read once, in place: the parser's lines
        /// are not made into fields, only the few that are forwarded.
        init(_ request: PreparedRequest, objectId: String?, legacyParse: Bool, map: String?, siteDomain: CookieDomain?) {
            method = request.method
            self.objectId = objectId
            self.legacyParse = legacyParse
            self.map = map
            crossSite = OriginCheck.isCrossSite(request, siteDomain: siteDomain)
            token = SessionCookies.token(in: request)
            retriable = request.header(.idempotencyKey) != nil
            forwardedFor = request.header(TrustedProxies.forwardedFor)
            var headers = HTTPFields()
            for name in LocationsClient.forwardedHeaders {
                if let value = request.header(name) { headers.append(HTTPField(name: name, value: value)) }
            }
            self.headers = headers
            requestID = RequestIDMiddleware.resolve(request.header(.requestID))
        }
    }

    /// A POST to a StudentLocation mount, or a PUT or DELETE of one pin (`objectId` as sent: `forward`
    /// checks it), answered once its body has arrived.
    func handling(_ request: PreparedRequest, objectId: String?, legacyParse: Bool, map: String? = nil) -> PreparedHandling {
        let write = Write(request, objectId: objectId, legacyParse: legacyParse, map: map, siteDomain: siteDomain)
        return .deferred(
            PreparedDeferral(bodyLimit: Self.maximumBodySize) { [self] body, eventLoop, peer, context, answer in
                var write = write
                (write.body, write.peer, write.context) = (body, peer, context)
                forward(write, on: eventLoop, answer: answer)
            })
    }

    /// The write's answer, given to `answer` on `eventLoop`. On the common path (a session this replica
    /// holds, a write a lease covers) the hop's answer is the only future: each future costs an allocation
    /// and a release of a generic object, and this is the gateway's busiest write.
    func forward(_ write: Write, on eventLoop: any EventLoop, answer: @escaping PreparedDeferral.Answer) {
        guard !write.crossSite else { return answer(ParseWire.refusal(.crossOrigin, requestID: write.requestID)) }
        guard let token = write.token else { return answer(ParseWire.refusal(.notLoggedIn, requestID: write.requestID)) }
        switch sessions.cachedLookup(token) {
        case .live(let account):
            forward(write, as: account, on: eventLoop, answer: answer)
        case .malformed:
            answer(ParseWire.refusal(.notLoggedIn, requestID: write.requestID))
        case .unknown(let digest):
            lookUp(digest, context: write.context, on: eventLoop).whenComplete { [self] result in
                switch result {
                case .success(let account?): forward(write, as: account, on: eventLoop, answer: answer)
                case .success(nil): answer(ParseWire.refusal(.notLoggedIn, requestID: write.requestID))
                case .failure(let error): answer(refusal(for: error, of: write))
                }
            }
        }
    }

    /// The write of a known session's account: counted against its subjects, then forwarded.
    private func forward(_ write: Write, as account: Account, on eventLoop: any EventLoop, answer: @escaping PreparedDeferral.Answer) {
        let path: String
        do throws(GatewayError) {
            path = try LocationsClient.mapPrefix(write.map) + LocationsClient.locationPath(write.objectId)
        } catch {
            return answer(ParseWire.refusal(error, requestID: write.requestID))
        }
        guard let body = write.body else {
            return answer(ParseWire.refusal(.bodyTooLarge(limit: Self.maximumBodySize), requestID: write.requestID))
        }
        let subjects = limit.subjects(
            account: account.key, address: trustedProxies.clientAddress(peer: write.peer, forwardedFor: write.forwardedFor),
            map: write.map.flatMap(MapSlug.init))
        // At once when it can be decided without waiting (a write this replica counted already), else from a
        // task that asks the database.
        if let decided = limit.decideAtOnce(subjects) {
            return send(write, as: account, path: path, body: body, subjects: subjects, decision: decided, on: eventLoop, answer: answer)
        }
        let decision = eventLoop.makePromise(of: WriteDecision.self)
        decision.completeWithTask { [limit] in try await limit.take(subjects) }
        decision.futureResult.whenComplete { [self] result in
            switch result {
            case .success(let decided):
                send(write, as: account, path: path, body: body, subjects: subjects, decision: decided, on: eventLoop, answer: answer)
            case .failure(let error):
                answer(refusal(for: error, of: write))
            }
        }
    }

    /// Sends the counted write to the service (or refuses it past the limit) and relays the answer.
    private func send(
        _ write: Write, as account: Account, path: String, body: ByteBuffer, subjects: [WriteLimit.Subject], decision: WriteDecision,
        on eventLoop: any EventLoop, answer: @escaping PreparedDeferral.Answer
    ) {
        let wait: Int? = if case .wait(let seconds) = decision { seconds } else { nil }
        // Past the limit, a retried post may still get the answer to its earlier attempt: nothing new is appended.
        let replayOnly = wait != nil && write.method == .POST && write.retriable
        if let wait, !replayOnly {
            return answer(ParseWire.refusal(.rateLimited(retryAfter: wait), requestID: write.requestID))
        }
        locations.exchange(
            method: write.method, path: path, query: nil, headers: write.headers, body: body,
            actor: account.actor, requestID: write.requestID, replayOnly: replayOnly, on: eventLoop, context: write.context
        ).whenComplete { [self] result in
            switch result {
            case .success(let relayed):
                if let wait, relayed.status == HTTPResponse.Status.preconditionFailed.code {
                    return answer(ParseWire.refusal(.rateLimited(retryAfter: wait), requestID: write.requestID))
                }
                if relayed.headers[.replayed] != nil, !replayOnly { giveBack(subjects) }
                if (200..<300).contains(relayed.status) {
                    if let slug = write.map.flatMap(MapSlug.init) { mapLists.invalidate(slug) } else { latest.invalidate() }
                }
                var status = HTTPResponse.Status(code: relayed.status)
                if write.legacyParse, write.method == .POST, status == .ok { status = .created }
                answer(Self.relay(relayed, status: status, requestID: write.requestID))
            case .failure(let error):
                answer(ParseWire.refusal(locations.unavailable(error, requestID: write.requestID), requestID: write.requestID))
            }
        }
    }

    /// A failure on the way (the database, the service) as the client is told it.
    private func refusal(for error: any Error, of write: Write) -> PreparedResponse {
        ParseWire.refusal(GatewayError.meaning(of: error, logger: locations.logger, requestID: write.requestID), requestID: write.requestID)
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

    /// The account of a session this replica's cache does not hold, from PostgreSQL (asked at most once a
    /// minute per session), traced as "session lookup" under the request's trace when one is recorded: one
    /// answered from the cache did no work worth a span.
    private func lookUp(_ digest: [UInt8], context: ServiceContext, on eventLoop: any EventLoop) -> EventLoopFuture<Account?> {
        let span = RequestTracing.traces(context) ? RequestTracing.tracer?.startSpan("session lookup", context: context) : nil
        let promise = eventLoop.makePromise(of: Account?.self)
        promise.completeWithTask { [sessions] in
            try await ServiceContext.withValue(span?.context ?? context) { try await sessions.account(digest: digest) }
        }
        guard let span else { return promise.futureResult }
        return promise.futureResult.always { _ in span.end() }
    }

    /// The service's answer as the client gets it: its status, body and the headers that mean something
    /// to a client.
    /// Each line is copied as the service wrote it (a lookup by name would join a name's lines into a new
    /// string), in the order of `relayed`.
    static func relay(_ answer: LocationsClient.Answer, status: HTTPResponse.Status, requestID: String) -> PreparedResponse {
        var fields = answer.headers.fields(named: relayed)
        fields.append(HTTPField(name: .requestID, value: requestID))
        return PreparedResponse(status: status, headers: HTTPFields(fields), body: answer.body)
    }

    private static let relayed: [HTTPField.Name] = [.contentType, .eTag, .cacheControl, .retryAfter]
}
