import HTTPTypes
@_spi(Internal) import Hummingbird
import NIOCore
import NIOHTTP1
import NIOPosix
import Tracing

/// Decides from a request's head (and the route's captured parameters) how it is answered without the
/// router's handler; nil leaves it to the handler. Runs on the connection's event loop at the door before
/// the router, so it must not block.
public typealias PreparedRouteAnswer = @Sendable (PreparedRequest, Parameters) -> PreparedHandling?

/// The router, with routes that may say how they are answered before it: each such route is declared
/// once, like any other (`on(_:method:routes:handling:)`, `on(_:method:routes:early:use:)`), and both
/// doors are made from that declaration: the router's handler, and the answer before the router on the
/// connection's event loop (`table().answer`).
///
/// Routes are added through it as through the router (groups made from it end here): it hands each on to
/// the router, and keeps the early answer of those that declare one.
public final class PreparedRoutes<Context: RequestContext>: RouterMethods {
    public let router: Router<Context>
    /// Early answers by route, "METHOD /path/{capture}" as the router names its routes.
    private var early: [String: PreparedRouteAnswer] = [:]
    /// The early answer of the route being added, between the declaration and `on` taking it.
    fileprivate var declaring: PreparedRouteAnswer?

    public init(_ router: Router<Context>) {
        self.router = router
    }

    @discardableResult public func on<Responder: HTTPResponder>(
        _ path: RouterPath, method: HTTPRequest.Method, responder: Responder
    ) -> Self where Responder.Context == Context {
        if let answer = declaring {
            early[name(method, path)] = answer
            declaring = nil
        }
        router.on(path, method: method, responder: responder)
        return self
    }

    /// Middleware for the routes added after it, as `Router.add(middleware:)`.
    @discardableResult public func add(middleware: any MiddlewareProtocol<Request, Response, Context>) -> Self {
        router.add(middleware: middleware)
        return self
    }

    /// Every route of the router as it is now, with the early answers declared: call it once all are added.
    public func table() -> RouteTable {
        RouteTable(routes: router.routes.map { ($0.method, $0.path, early[name($0.method, $0.path)]) })
    }
}

extension RouterMethods {
    /// A route answered the same way at both doors: `handling` decides from the head (an answer from memory,
    /// a deferred answer once the body has arrived, or a stream). `routes` must be what this group was made from.
    @discardableResult public func on(
        _ path: RouterPath = "", method: HTTPRequest.Method, routes: PreparedRoutes<Context>,
        handling: @escaping @Sendable (PreparedRequest, Parameters) -> PreparedHandling
    ) -> Self {
        let early: PreparedRouteAnswer = { handling($0, $1) }
        return declare(path, method: method, routes: routes, responder: PreparedRouteResponder(early: early, otherwise: nil), early: early)
    }

    /// A route answered before the router when `early` can (from memory, say), and by `use` otherwise, at
    /// either door. `routes` must be what this group was made from.
    @discardableResult public func on(
        _ path: RouterPath = "", method: HTTPRequest.Method, routes: PreparedRoutes<Context>,
        early: @escaping PreparedRouteAnswer,
        use handler: @escaping @Sendable (Request, Context) async throws -> Response
    ) -> Self {
        declare(path, method: method, routes: routes, responder: PreparedRouteResponder(early: early, otherwise: handler), early: early)
    }

    private func declare(
        _ path: RouterPath, method: HTTPRequest.Method, routes: PreparedRoutes<Context>, responder: PreparedRouteResponder<Context>,
        early: @escaping PreparedRouteAnswer
    ) -> Self {
        routes.declaring = early
        on(path, method: method, responder: responder)
        precondition(routes.declaring == nil, "a route with an answer before the router is added through the PreparedRoutes its group was made from")
        return self
    }
}

/// The router's door of a route declared with an early answer: the same answer, made from the router's
/// request; a stream is written through the response body (`PreparedStream.routed`).
struct PreparedRouteResponder<Context: RequestContext>: HTTPResponder {
    let early: PreparedRouteAnswer
    let otherwise: (@Sendable (Request, Context) async throws -> Response)?

    func respond(to request: Request, context: Context) async throws -> Response {
        let connection = context as? any PreparedRequestContext
        guard let handling = early(PreparedRequest(request, peer: connection?.remoteAddress), context.parameters) else {
            guard let otherwise else { throw HTTPError(.internalServerError) }
            return try await otherwise(request, context)
        }
        let eventLoop = connection?.eventLoop ?? MultiThreadedEventLoopGroup.singleton.any()
        switch handling {
        case .answer(let answer):
            return answer.response
        case .deferred(let deferral):
            let body: ByteBuffer?
            do {
                body = try await request.body.collect(upTo: deferral.bodyLimit)
            } catch is NIOTooManyBytesError {
                body = nil
            } catch let error as HTTPError where error.status == .contentTooLarge {
                body = nil
            }
            let remoteAddress = connection?.remoteAddress
            let answer = await withCheckedContinuation { (answered: CheckedContinuation<PreparedResponse, Never>) in
                deferral.respond(body, eventLoop, remoteAddress, ServiceContext.current ?? .topLevel) { answered.resume(returning: $0) }
            }
            return answer.response
        case .stream(let opening):
            // A HEAD gets the stream's head alone, its body empty and of no stated length, as the GET's is.
            if HeadRequest.isAsked { return Response(status: .ok, headers: opening.headers, body: ResponseBody { _ in }) }
            return try await PreparedStream.routed(
                opening, on: eventLoop, remoteAddress: connection?.remoteAddress, connectionClosed: connection?.connectionClosed)
        }
    }
}

/// What the router's door of a prepared route takes from a request context that knows its connection: a
/// deferred answer is worked out on the connection's event loop, and a stream ends when the connection
/// closes. Without it, any event loop serves, and a stream learns its client left when a write fails.
public protocol PreparedRequestContext: RequestContext {
    var eventLoop: any EventLoop { get }
    var connectionClosed: EventLoopFuture<Void> { get }
    var remoteAddress: SocketAddress? { get }
}

extension PreparedRequest {
    /// A request the router read, as the early answers see it.
    public init(_ request: Request, peer: SocketAddress? = nil) {
        self.init(request.head, peer: peer)
    }

    /// A request's head as the router and an HTTP/2 stream have it: `:path` is the target, and `:authority`
    /// the `Host` header, first, as HTTP/1 sends it.
    public init(_ head: HTTPRequest, peer: SocketAddress? = nil) {
        var headers = HTTPFields()
        if let authority = head.authority {
            headers.reserveCapacity(head.headerFields.count + 1)
            headers.append(HTTPField(name: .host, value: authority))
            headers.append(contentsOf: head.headerFields)
        } else {
            headers = head.headerFields
        }
        self.init(method: HTTPMethod(rawValue: head.method.rawValue), target: head.path ?? "/", headers: headers, peer: peer)
    }
}

/// The router's routes, in a trie of its paths such as the router builds, with the early answers declared:
/// the door before the router asks it which requests it answers, and the answer to a request no route took,
/// which methods its path has. A path resolves to the pattern it would resolve to in the router (one with a
/// literal segment where another captures wins), as the router has its default options.
public struct RouteTable: Sendable {
    /// The routes of one path pattern: one object, so that finding it for a request costs one reference count.
    final class Endpoint: Sendable {
        /// The early answer of each method that has one.
        let early: [Early]
        let methods: [HTTPRequest.Method]

        init(early: [Early] = [], methods: [HTTPRequest.Method] = []) {
            self.early = early
            self.methods = methods
        }
    }

    /// One route's early answer, with its method and its name ("METHOD /path/{capture}", as the router's
    /// metrics name it).
    final class Early: Sendable {
        let method: HTTPMethod
        let answer: PreparedRouteAnswer
        let name: String

        init(method: HTTPMethod, answer: @escaping PreparedRouteAnswer, name: String) {
            self.method = method
            self.answer = answer
            self.name = name
        }
    }

    private let trie: RouterTrie<Endpoint>?
    /// The endpoints whose pattern captures nothing, by their path: a request for one of those paths
    /// resolves to it in the trie too, and one dictionary lookup of the path finds it without copying it.
    private let literal: [Substring: Endpoint]
    /// The endpoints whose pattern captures its second segment and nothing else (`/maps/{slug}/v1/...`), by
    /// their first segment: a request whose second segment no other pattern names there resolves to the one
    /// whose rest it spells, as in the trie, with two lookups and no copy.
    private let secondSegment: [Substring: SecondSegment]

    /// Patterns under one first segment that capture the second.
    struct SecondSegment: Sendable {
        var parameter: Substring
        /// The endpoints, by the path after the captured segment (`/v1/StudentLocation`; empty for none).
        var byRest: [Substring: Endpoint] = [:]
        /// Second segments other patterns under the same first segment spell literally: those paths are the
        /// trie's to resolve.
        var spelled: Set<Substring> = []
    }

    /// No routes: nothing is answered before the router.
    public init() {
        trie = nil
        literal = [:]
        secondSegment = [:]
    }

    init(routes: [(method: HTTPRequest.Method, path: RouterPath, early: PreparedRouteAnswer?)]) {
        var found: [String: (path: RouterPath, early: [Early], methods: [HTTPRequest.Method])] = [:]
        for route in routes {
            var entry = found[route.path.description] ?? (route.path, [], [])
            entry.methods.append(route.method)
            if let early = route.early {
                entry.early.append(Early(method: HTTPMethod(rawValue: route.method.rawValue), answer: early, name: name(route.method, route.path)))
            }
            found[route.path.description] = entry
        }
        let endpoints = found.mapValues { (path: $0.path, endpoint: Endpoint(early: $0.early, methods: $0.methods)) }
        let builder = RouterPathTrieBuilder<Endpoint>()
        var literal: [Substring: Endpoint] = [:]
        var secondSegment: [Substring: SecondSegment] = [:]
        // First segments under which some pattern has anything but a literal or the one capture second, or
        // a first segment that is not literal: there the trie alone resolves.
        var unsure: Set<Substring> = []
        for (path, endpoint) in endpoints.values {
            builder.addEntry(path, value: endpoint)
            let kinds = path.components.map(Self.kind)
            if kinds.allSatisfy({ if case .literal = $0 { true } else { false } }) {
                literal[Substring(path.description)] = endpoint
            }
            guard kinds.count >= 2, case .literal(let first) = kinds[0] else { continue }
            switch kinds[1] {
            case .literal(let second):
                secondSegment[first, default: SecondSegment(parameter: "")].spelled.insert(second)
            case .capture(let parameter):
                // One that captures more further on loses to a literal rest in the trie, as here: it is left out.
                guard kinds.dropFirst(2).allSatisfy({ if case .literal = $0 { true } else { false } }) else { continue }
                var entry = secondSegment[first, default: SecondSegment(parameter: parameter)]
                if entry.parameter.isEmpty { entry.parameter = parameter }
                if entry.parameter != parameter { unsure.insert(first) }
                let rest = kinds.dropFirst(2).map { if case .literal(let text) = $0 { "/" + text } else { "" } }.joined()
                entry.byRest[Substring(rest)] = endpoint
                secondSegment[first] = entry
            default:
                unsure.insert(first)
            }
        }
        trie = builder.build()
        self.literal = literal
        self.secondSegment = secondSegment.filter { !unsure.contains($0.key) && !$0.value.byRest.isEmpty }
    }

    private enum Kind {
        case literal(Substring)
        case capture(Substring)
        case other
    }

    /// A pattern's segment as its text shows it: `{name}` a capture, with no `*` or `!` a literal.
    private static func kind(_ element: RouterPath.Element) -> Kind {
        let text = Substring(element.description)
        if text.first == "{", text.last == "}", text.dropFirst().dropLast().allSatisfy({ $0 != "{" && $0 != "}" }) {
            return .capture(text.dropFirst().dropLast())
        }
        return text.contains(where: { "{}*!".contains($0) }) || text.isEmpty ? .other : .literal(text)
    }

    /// The endpoint of a path whose pattern captures its second segment (`secondSegment`), with the capture;
    /// nil when the trie is to resolve it. A segment with `%` in it is the trie's too, as any it may read otherwise.
    private func secondSegmentEndpoint(_ path: Substring) -> (Endpoint, Parameters)? {
        let bytes = path.utf8
        guard bytes.first == UInt8(ascii: "/") else { return nil }
        let afterSlash = bytes.index(after: bytes.startIndex)
        guard let firstEnd = bytes[afterSlash...].firstIndex(of: UInt8(ascii: "/")),
            let entry = secondSegment[Substring(path.utf8[afterSlash..<firstEnd])]
        else { return nil }
        let secondStart = bytes.index(after: firstEnd)
        let secondEnd = bytes[secondStart...].firstIndex(of: UInt8(ascii: "/")) ?? bytes.endIndex
        let second = Substring(path.utf8[secondStart..<secondEnd])
        guard !second.isEmpty, !second.utf8.contains(UInt8(ascii: "%")), !entry.spelled.contains(second),
            let endpoint = entry.byRest[Substring(path.utf8[secondEnd...])]
        else { return nil }
        var parameters = Parameters()
        parameters.append(key: entry.parameter, value: second)
        return (endpoint, parameters)
    }

    /// The door before the router: the early answer of the request's route and the route's name, or nil
    /// when the request is the router's (no early answer, or the early answer left it to the handler).
    public func answer(_ request: PreparedRequest) -> (handling: PreparedHandling, route: String)? {
        let (endpoint, parameters) =
            literal[request.path].map { ($0, Parameters()) } ?? secondSegmentEndpoint(request.path) ?? trie?.resolve(String(request.path))
            ?? (Endpoint(), [:])
        guard let early = endpoint.early.first(where: { $0.method == request.method }), let handling = early.answer(request, parameters) else {
            return nil
        }
        return (handling, early.name)
    }

    /// The methods routed on `path`, on the pattern that wins for it, with HEAD after GET (`HeadAsItsGet`
    /// answers it): what a 405's `Allow` names.
    public func methods(on path: Substring) -> [HTTPRequest.Method] {
        var methods = trie?.resolve(String(path))?.value.methods ?? []
        if let get = methods.firstIndex(of: .get), !methods.contains(.head) { methods.insert(.head, at: get + 1) }
        return methods
    }
}

func name(_ method: HTTPRequest.Method, _ path: RouterPath) -> String {
    "\(method.rawValue) \(path)"
}
