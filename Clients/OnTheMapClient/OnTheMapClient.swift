import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import OnTheMapShared

/// A typed client of the On The Map gateway's public API: every call answers a value or throws an
/// `OnTheMapError` that says what a person must do next.
///
/// Reads are public; writes need `session` (from `logIn`), sent as `Authorization: Bearer <session id>`.
/// With `map`, the pin and session calls go to that class map (`/maps/{slug}/…`); the calls of the map API
/// (`createMap`, `join`, …) name their map themselves.
public struct OnTheMapClient: Sendable {
    /// The gateway's base URL, without a trailing slash: `http://127.0.0.1:8080`.
    public let gateway: String
    public var session: Session?
    /// The class map's slug (`ios-2027`) the pin and session calls go to; nil for the gateway's default map.
    /// One session works on every map.
    public var map: String?
    /// How long one call may take, connection included.
    public var timeout: Duration
    /// Called with each request and answer, for `--verbose`; passwords and session ids are redacted.
    public var exchangeLog: (@Sendable (String) -> Void)?
    /// The live feed's connection, which stays open (`liveChanges`).
    let http: HTTPClient
    /// Every other call's exchange.
    let transport: any GatewayTransport

    /// - Parameters:
    ///   - httpClient: defaults to one shared by every client in the process, which fails at once when
    ///     nothing listens (rather than retrying until the timeout) and follows no redirects.
    ///   - transport: how the calls but the live feed reach the gateway; by default over HTTP with `httpClient`.
    public init(
        gateway: String, session: Session? = nil, map: String? = nil, timeout: Duration = .seconds(10), httpClient: HTTPClient? = nil,
        transport: (any GatewayTransport)? = nil
    ) {
        var base = gateway
        while base.hasSuffix("/") { base.removeLast() }
        self.gateway = base
        self.session = session
        self.map = map
        self.timeout = timeout
        let http = httpClient ?? Self.sharedHTTPClient
        self.http = http
        self.transport = transport ?? HTTPTransport(client: http)
    }

    static let sharedHTTPClient: HTTPClient = {
        var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow, timeout: .init(connect: .seconds(2), read: .seconds(45)))
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.httpVersion = .http1Only
        // Asks for gzip (`Accept-Encoding: deflate, gzip`) and reads it: the latest 100 come in a fifth of
        // their bytes. A body that inflates past 100 times its size is refused.
        configuration.decompression = .enabled(limit: .ratio(100))
        return HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton, configuration: configuration)
    }()

    // MARK: Session and account

    /// `POST /v1/accounts`: a new local account. Answers its key.
    @discardableResult
    public func signUp(email: String, password: String, firstName: String, lastName: String) async throws(OnTheMapError) -> String {
        let body = Self.json(["email": email, "password": password, "firstName": firstName, "lastName": lastName])
        let answer = try await send(.POST, "/v1/accounts", body: body, secrets: [password])
        guard answer.status == 201 else { throw Self.sessionRouteError(answer) }
        return try Self.decode(SessionWire.SignUpAnswer.self, SessionWire.stripped(answer.body), answer).account.key
    }

    /// `POST /v1/session`: logs in and answers the session (this value is not changed; keep the answer).
    public func logIn(email: String, password: String) async throws(OnTheMapError) -> Session {
        let body = Self.json(["username": email, "password": password], under: "udacity")
        let answer = try await send(.POST, mapPrefix + "/v1/session", body: body, secrets: [password], redactAnswer: true)
        if answer.status == 403 { throw Self.errorBody(answer).error == LoginRefusal.accountDisabled ? .accountDisabled : .wrongCredentials }
        guard answer.status == 200 else { throw Self.sessionRouteError(answer) }
        return try Self.session(answer)
    }

    /// `DELETE /v1/session`: ends the session on the server, at once, on every replica.
    public func logOut() async throws(OnTheMapError) {
        guard session != nil else { throw .notLoggedIn(message: "not logged in") }
        let answer = try await send(.DELETE, mapPrefix + "/v1/session", authorized: true, redactAnswer: true)
        guard answer.status == 200 else { throw Self.sessionRouteError(answer) }
    }

    /// `GET /v1/users/me`: who the session belongs to; `notLoggedIn` once it has ended.
    public func me() async throws(OnTheMapError) -> UserProfile {
        guard session != nil else { throw .notLoggedIn(message: "not logged in") }
        let answer = try await send(.GET, mapPrefix + "/v1/users/me", authorized: true)
        if answer.status == 404 { throw .notLoggedIn(message: "your session has ended") }
        guard answer.status == 200 else { throw Self.sessionRouteError(answer) }
        return try Self.profile(answer)
    }

    /// `GET /v1/users/{key}`: a student's public profile.
    public func user(key: String) async throws(OnTheMapError) -> UserProfile {
        let answer = try await send(.GET, mapPrefix + "/v1/users/\(Self.pathSegment(key))", authorized: session != nil)
        guard answer.status == 200 else { throw Self.sessionRouteError(answer) }
        return try Self.profile(answer)
    }

    // MARK: Pins

    /// The list's query, as the contract spells it; nil leaves a parameter to the gateway's default.
    public struct ListQuery: Sendable, Hashable {
        public var limit: Int?
        public var skip: Int?
        /// Comma-separated keys, `-` for descending (`-updatedAt`).
        public var order: String?
        /// Parse's JSON filter: equality on text fields, as in `{"uniqueKey":"1234"}`.
        public var `where`: String?
        public var uniqueKey: String?
        /// The list as it was at this moment, from the log; the other parameters apply then.
        public var at: Moment?

        public init(
            limit: Int? = nil, skip: Int? = nil, order: String? = nil, where filter: String? = nil, uniqueKey: String? = nil,
            at: Moment? = nil
        ) {
            self.limit = limit
            self.skip = skip
            self.order = order
            self.where = filter
            self.uniqueKey = uniqueKey
            self.at = at
        }

        var items: [(String, String)] {
            var items: [(String, String)] = []
            if let limit { items.append(("limit", String(limit))) }
            if let skip { items.append(("skip", String(skip))) }
            if let order { items.append(("order", order)) }
            if let filter = `where` { items.append(("where", filter)) }
            if let uniqueKey { items.append(("uniqueKey", uniqueKey)) }
            if let at { items.append(("at", at.text)) }
            return items
        }
    }

    /// `GET /v1/StudentLocation`: pins, newest first unless `order` says otherwise; with `at`, as they were then.
    public func list(_ query: ListQuery = ListQuery()) async throws(OnTheMapError) -> [StudentLocation] {
        let answer = try await read(mapPrefix + "/v1/StudentLocation", query: query.items)
        return try Self.decode(StudentLocationList.self, answer.body[...], answer).results
    }

    /// The list exactly as the gateway sent it (`{"results":[…]}`), for programs that pass it on.
    public func listJSON(_ query: ListQuery = ListQuery()) async throws(OnTheMapError) -> [UInt8] {
        try await read(mapPrefix + "/v1/StudentLocation", query: query.items).body
    }

    /// `GET /v1/StudentLocation.geojson`: the pins the same query lists, as the gateway sent them: an RFC 7946
    /// FeatureCollection of Points at [longitude, latitude] with name, link, place and updatedAt.
    public func geoJSON(_ query: ListQuery = ListQuery()) async throws(OnTheMapError) -> [UInt8] {
        try await read(mapPrefix + "/v1/StudentLocation.geojson", query: query.items).body
    }

    /// `GET /v1/StudentLocation/{objectId}`.
    public func location(_ id: ObjectID) async throws(OnTheMapError) -> StudentLocation {
        let answer = try await read(pinPath(id), namesPin: true)
        return try Self.decode(StudentLocation.self, answer.body[...], answer)
    }

    /// The session's newest pin, the one the apps treat as yours; nil when it has none on the map.
    public func ownPin() async throws(OnTheMapError) -> StudentLocation? {
        guard let session else { throw .notLoggedIn(message: "not logged in") }
        return try await list(ListQuery(limit: 1, uniqueKey: session.accountKey)).first
    }

    /// `GET /v1/StudentLocation/{objectId}/history`: what happened to a pin, oldest first, each at the moment
    /// `at` shows it; a deleted pin's too. `notFound` for a pin the gateway never had, or no longer shows.
    public func history(_ id: ObjectID) async throws(OnTheMapError) -> PinHistory {
        let answer = try await historyAnswer(id)
        return try Self.decode(PinHistory.self, answer.body[...], answer)
    }

    /// A pin's history exactly as the gateway sent it, for programs that pass it on.
    public func historyJSON(_ id: ObjectID) async throws(OnTheMapError) -> [UInt8] {
        try await historyAnswer(id).body
    }

    private func historyAnswer(_ id: ObjectID) async throws(OnTheMapError) -> Answer {
        try await read(pinPath(id) + "/history", namesPin: true)
    }

    /// A read of the StudentLocation routes: its answer when 200, else the error it means. Public on the
    /// default map; a class map may be readable by its members only, so the session goes along when there is one.
    private func read(_ path: String, query: [(String, String)] = [], namesPin: Bool = false) async throws(OnTheMapError) -> Answer {
        let answer = try await send(.GET, path, query: query, authorized: map != nil && session != nil)
        guard answer.status == 200 else { throw locationRouteError(answer, namesPin: namesPin) }
        return answer
    }

    /// `POST /v1/StudentLocation`: a new pin under the session's name. `idempotencyKey` makes a retry safe.
    public func post(_ pin: LocationInput, idempotencyKey: String? = nil) async throws(OnTheMapError) -> PostLocationAnswer {
        var headers: [(String, String)] = []
        if let idempotencyKey { headers.append(("Idempotency-Key", idempotencyKey)) }
        let answer = try await send(
            .POST, mapPrefix + "/v1/StudentLocation", body: Array(pin.json.readableBytesView), headers: headers, authorized: true)
        guard answer.status == 200 else { throw locationRouteError(answer, posting: true) }
        return try Self.decode(PostLocationAnswer.self, answer.body[...], answer)
    }

    /// `PUT /v1/StudentLocation/{objectId}`: changes your own pin.
    public func update(_ id: ObjectID, _ pin: LocationInput) async throws(OnTheMapError) -> PutLocationAnswer {
        let answer = try await send(.PUT, pinPath(id), body: Array(pin.json.readableBytesView), authorized: true)
        guard answer.status == 200 else { throw locationRouteError(answer, namesPin: true) }
        return try Self.decode(PutLocationAnswer.self, answer.body[...], answer)
    }

    /// `DELETE /v1/StudentLocation/{objectId}`: removes your own pin.
    public func delete(_ id: ObjectID) async throws(OnTheMapError) {
        let answer = try await send(.DELETE, pinPath(id), authorized: true)
        guard answer.status == 200 else { throw locationRouteError(answer, namesPin: true) }
    }

    // MARK: Geocoding

    /// `GET /v1/geocode?q=`: places matching `place`, best first; `notFound` when none does.
    public func geocode(_ place: String, limit: Int? = nil) async throws(OnTheMapError) -> [GeocodeCandidate] {
        var query = [("q", place)]
        if let limit { query.append(("limit", String(limit))) }
        let answer = try await send(.GET, "/v1/geocode", query: query)
        guard answer.status == 200 else { throw Self.sessionRouteError(answer) }
        return try Self.decode(GeocodeAnswer.self, answer.body[...], answer).results
    }
}

// MARK: - HTTP

extension OnTheMapClient {
    /// One request as a call makes it.
    public struct Request: Sendable {
        public var method: HTTPMethod
        /// The whole URL: the gateway's base, the path and the query.
        public var url: String
        public var headers: HTTPHeaders
        public var body: [UInt8]?

        /// The same as AsyncHTTPClient sends it.
        var httpClientRequest: HTTPClientRequest {
            var request = HTTPClientRequest(url: url)
            request.method = method
            request.headers = headers
            if let body { request.body = .bytes(ByteBuffer(bytes: body)) }
            return request
        }
    }

    /// One answer, whole.
    public struct Answer: Sendable {
        public var status: Int
        public var headers: HTTPHeaders
        public var body: [UInt8]

        public init(status: Int, headers: HTTPHeaders, body: [UInt8]) {
            self.status = status
            self.headers = headers
            self.body = body
        }
    }

    /// The most of an answer a call reads (the latest 100 are 35 kB).
    public static let maximumAnswerSize = 16 * 1024 * 1024

    /// Where the map's routes begin: `/maps/ios-2027` for a class map, nothing for the default map.
    var mapPrefix: String {
        map.map { "/maps/\(Self.pathSegment($0))" } ?? ""
    }

    /// `/v1/StudentLocation/{objectId}` on this client's map.
    func pinPath(_ id: ObjectID) -> String {
        mapPrefix + "/v1/StudentLocation/\(Self.pathSegment(id.rawValue))"
    }

    func url(_ path: String, query: [(String, String)] = []) -> String {
        guard !query.isEmpty else { return gateway + path }
        return gateway + path + "?" + query.map { "\(Self.queryComponent($0.0))=\(Self.queryComponent($0.1))" }.joined(separator: "&")
    }

    func request(
        _ method: HTTPMethod, _ path: String, query: [(String, String)] = [], body: [UInt8]? = nil,
        headers: [(String, String)] = [], authorized: Bool = false
    ) -> Request {
        var request = Request(method: method, url: url(path, query: query), headers: HTTPHeaders(), body: body)
        request.headers.add(name: "User-Agent", value: "onthemap/1.0")
        request.headers.add(name: "Accept", value: "application/json")
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if authorized, let session { request.headers.add(name: "Authorization", value: "Bearer \(session.id)") }
        if body != nil { request.headers.add(name: "Content-Type", value: "application/json") }
        return request
    }

    /// One exchange. `secrets` are blanked in the exchange log; with `redactAnswer`, so is every quoted id
    /// and cookie in the answer (the session routes hand out session ids).
    func send(
        _ method: HTTPMethod, _ path: String, query: [(String, String)] = [], body: [UInt8]? = nil,
        headers: [(String, String)] = [], authorized: Bool = false, secrets: [String] = [],
        redactAnswer: Bool = false
    ) async throws(OnTheMapError) -> Answer {
        if authorized, session == nil { throw .notLoggedIn(message: "not logged in") }
        let request = request(method, path, query: query, body: body, headers: headers, authorized: authorized)
        let hidden = secrets + [session?.id].compactMap { $0 }
        if let exchangeLog { exchangeLog(ExchangeLog.describe(request, hiding: hidden)) }
        let started = ContinuousClock.now
        do {
            let answer = try await transport.exchange(request, timeout: timeout)
            if let exchangeLog {
                exchangeLog(ExchangeLog.describe(answer, after: ContinuousClock.now - started, hiding: hidden, redactIDs: redactAnswer))
            }
            return answer
        } catch {
            throw unreachable(error)
        }
    }

    func unreachable(_ error: any Error) -> OnTheMapError {
        .unreachable(gateway: gateway, reason: Self.reason(error, timeout: timeout))
    }

    /// A transport failure in a few words.
    static func reason(_ error: any Error, timeout: Duration) -> String {
        let text = String(describing: error).lowercased()
        if text.contains("refused") { return "connection refused" }
        if let error = error as? HTTPClientError {
            if error == .connectTimeout { return "no connection within 2 s" }
            if error == .deadlineExceeded || error == .readTimeout { return "no answer within \(timeout.components.seconds) s" }
            if error == .remoteConnectionClosed { return "the connection was closed before an answer" }
            if error == .invalidURL || error == .emptyHost || error == .emptyScheme || text.contains("unsupportedscheme") {
                return "not a valid http:// URL"
            }
        }
        if text.contains("dns") || text.contains("resolve") || text.contains("lookup") { return "the host name does not resolve" }
        if text.contains("unreachable") { return "network unreachable" }
        if text.contains("reset") { return "connection reset" }
        return String(describing: error)
    }

    static func queryComponent(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
    }

    static func pathSegment(_ text: String) -> String { queryComponent(text) }

    /// A request body: an object of `fields` in the order given, or, with `key`, an object holding that
    /// object under `key` (`{"udacity":{…}}`).
    static func json(_ fields: KeyValuePairs<String, String>, under key: String? = nil) -> [UInt8] {
        var writer = JSONWriter()
        writer.beginObject()
        if let key {
            writer.key(key)
            writer.beginObject()
        }
        for (name, value) in fields { writer.field(name, value) }
        if key != nil { writer.endObject() }
        writer.endObject()
        return Array(writer.buffer.readableBytesView)
    }

    static func decode<T: Decodable>(_ type: T.Type, _ bytes: ArraySlice<UInt8>, _ answer: Answer) throws(OnTheMapError) -> T {
        do {
            return try JSONDecoder().decode(type, from: Data(bytes))
        } catch {
            throw .serverFault(status: answer.status, message: "unreadable answer: \(String(decoding: bytes.prefix(200), as: UTF8.self))")
        }
    }

    /// The session a login's answer opened (`POST /v1/session`'s, and a browser sign-in's, which is the same).
    static func session(_ answer: Answer) throws(OnTheMapError) -> Session {
        let login = try decode(SessionWire.LoginAnswer.self, SessionWire.stripped(answer.body), answer)
        return Session(id: login.session.id, accountKey: login.account.key, expiration: login.session.expiration)
    }

    static func profile(_ answer: Answer) throws(OnTheMapError) -> UserProfile {
        let document = try decode(SessionWire.UserDocument.self, SessionWire.stripped(answer.body), answer)
        return UserProfile(
            key: document.key, firstName: document.firstName ?? "", lastName: document.lastName ?? "",
            email: document.email?.address ?? "")
    }

    static func errorBody(_ answer: Answer) -> SessionWire.ErrorBody {
        (try? JSONDecoder().decode(SessionWire.ErrorBody.self, from: Data(SessionWire.stripped(answer.body)))) ?? SessionWire.ErrorBody()
    }

    static func retryAfter(_ answer: Answer) -> Int? {
        answer.headers.first(name: "Retry-After").flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }
    }

    /// Errors of the session, users, accounts and geocode routes: `{status, parameter?, error}`.
    static func sessionRouteError(_ answer: Answer) -> OnTheMapError {
        let body = errorBody(answer)
        let message = body.error ?? "HTTP \(answer.status)"
        switch answer.status {
        case 429: return .throttled(retryAfter: retryAfter(answer), message: message)
        case 401: return .notLoggedIn(message: message)
        case 404: return .notFound(message: message)
        case 400..<500: return .refused(message: message, parameter: body.parameter)
        default: return .serverFault(status: answer.status, message: message)
        }
    }

    /// Errors of the StudentLocation routes on this client's map. A class map answers 404 alike when it does
    /// not exist and when the caller may not read it: on a route that names no pin (`namesPin` false) that is
    /// all a 404 can mean. A 403 to a post there is the map's rule on who posts, not a pin's owner.
    func locationRouteError(_ answer: Answer, namesPin: Bool = false, posting: Bool = false) -> OnTheMapError {
        guard let map else { return Self.locationRouteError(answer) }
        switch answer.status {
        case 404 where !namesPin || Self.errorBody(answer).error != Self.pinNotFound: return .noSuchMap(slug: map)
        case 403 where posting: return .notAllowed(message: Self.errorBody(answer).error ?? "HTTP 403")
        default: return Self.locationRouteError(answer)
        }
    }

    /// The gateway's words for an unknown pin, on every map.
    static let pinNotFound = "Object not found."

    /// Errors of the StudentLocation routes: Parse's `{code, error}`.
    static func locationRouteError(_ answer: Answer) -> OnTheMapError {
        let body = errorBody(answer)
        let message = body.error ?? "HTTP \(answer.status)"
        switch (answer.status, body.code) {
        case (401, _), (_, 209): return .notLoggedIn(message: message)
        case (403, _): return .notYours(message: message)
        case (404, _): return .notFound(message: message)
        case (429, _): return .throttled(retryAfter: retryAfter(answer), message: message)
        case (400..<500, _): return .refused(message: message, parameter: nil)
        default: return .serverFault(status: answer.status, message: message)
        }
    }
}

/// How a client's calls reach the gateway, one whole exchange at a time: `HTTPTransport` over HTTP, or, in a
/// test, the gateway's router in memory.
public protocol GatewayTransport: Sendable {
    /// The answer to `request`, whole, within `timeout`; throws when none came.
    func exchange(_ request: OnTheMapClient.Request, timeout: Duration) async throws -> OnTheMapClient.Answer
}

/// The calls over HTTP, through AsyncHTTPClient.
public struct HTTPTransport: GatewayTransport {
    let client: HTTPClient

    public init(client: HTTPClient) {
        self.client = client
    }

    public func exchange(_ request: OnTheMapClient.Request, timeout: Duration) async throws -> OnTheMapClient.Answer {
        let response = try await client.execute(request.httpClientRequest, timeout: TimeAmount(timeout))
        let buffer = try await response.body.collect(upTo: OnTheMapClient.maximumAnswerSize)
        return OnTheMapClient.Answer(status: Int(response.status.code), headers: response.headers, body: Array(buffer.readableBytesView))
    }
}
