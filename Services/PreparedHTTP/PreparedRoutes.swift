import HTTPTypes
import Hummingbird
import NIOCore
import NIOHTTP1
import NIOPosix

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
            early[RouteTable.name(method, path)] = answer
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
        RouteTable(
            routes: router.routes.map { route in
                RouteTable.Route(method: route.method, path: route.path, early: early[RouteTable.name(route.method, route.path)])
            })
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
        guard let handling = early(PreparedRequest(request), context.parameters) else {
            guard let otherwise else { throw HTTPError(.internalServerError) }
            return try await otherwise(request, context)
        }
        let connection = context as? any PreparedRequestContext
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
            return try await deferral.respond(body, eventLoop).get().response
        case .stream(let opening):
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
    /// A request the router read, as the early answers see it (`Host` among its headers, as NIO spells them).
    public init(_ request: Request) {
        var headers = HTTPHeaders()
        if let authority = request.head.authority { headers.add(name: "Host", value: authority) }
        for field in request.headers { headers.add(name: field.name.canonicalName, value: field.value) }
        self.init(method: HTTPMethod(rawValue: request.method.rawValue), target: request.uri.description, headers: headers)
    }
}

/// The router's routes, by method and path pattern, with the early answers declared: the door before the
/// router asks it which requests it answers, and the answer to a request no route took, which methods its path has.
///
/// It picks a request's route as the router does: of the patterns its path matches, the one with a literal
/// segment where the others capture, earliest; then the route of the request's method on that pattern.
public struct RouteTable: Sendable {
    struct Route: Sendable {
        let method: HTTPRequest.Method
        /// Each segment spelled out, or nil where it captures (named in `captures`) or is a wildcard.
        let segments: [Substring?]
        let captures: [Substring?]
        /// "METHOD /path/{capture}", as the router's metrics name it.
        let name: String
        let early: PreparedRouteAnswer?

        init(method: HTTPRequest.Method, path: RouterPath, early: PreparedRouteAnswer?) {
            self.method = method
            let texts = path.components.map(\.description)
            segments = texts.map { $0.hasPrefix("{") || $0.hasPrefix("*") ? nil : Substring($0) }
            captures = texts.map { $0.hasPrefix("{") && $0.hasSuffix("}") ? Substring($0.dropFirst().dropLast()) : nil }
            name = RouteTable.name(method, path)
            self.early = early
        }
    }

    private let routes: [Route]
    /// The routes with an early answer, each with the values its captures must not take because a pattern
    /// with a literal segment there wins for that path (`/v1/StudentLocation/events` over `…/{objectId}`).
    private let prepared: [(route: Route, method: HTTPMethod, shadowed: [Int: [Substring]])]
    /// Of `prepared`, those whose every segment is spelled out, by their path: the door finds them with one
    /// lookup. `captured`: the others, matched segment by segment.
    private let literal: [Substring: [Int]]
    private let captured: [Int]

    /// No routes: nothing is answered before the router.
    public init() {
        self.init(routes: [])
    }

    init(routes: [Route]) {
        self.routes = routes
        prepared = routes.compactMap { route in
            guard route.early != nil else { return nil }
            var shadowed: [Int: [Substring]] = [:]
            for other in routes where other.segments.count == route.segments.count {
                for (index, segment) in route.segments.enumerated() where segment == nil {
                    guard let literal = other.segments[index], Self.agree(route.segments, other.segments, except: index) else { continue }
                    shadowed[index, default: []].append(literal)
                }
            }
            return (route, HTTPMethod(rawValue: route.method.rawValue), shadowed)
        }
        var literal: [Substring: [Int]] = [:]
        var captured: [Int] = []
        for (index, entry) in prepared.enumerated() {
            let spelled = entry.route.segments.compactMap { $0 }
            if spelled.count == entry.route.segments.count {
                literal[Substring("/" + spelled.joined(separator: "/")), default: []].append(index)
            } else {
                captured.append(index)
            }
        }
        self.literal = literal
        self.captured = captured
    }

    static func name(_ method: HTTPRequest.Method, _ path: RouterPath) -> String {
        "\(method.rawValue) \(path)"
    }

    /// Whether two patterns could match the same path but for the segment at `index`.
    private static func agree(_ a: [Substring?], _ b: [Substring?], except index: Int) -> Bool {
        zip(a, b).enumerated().allSatisfy { position, pair in
            position == index || pair.0 == nil || pair.1 == nil || pair.0 == pair.1
        }
    }

    /// The door before the router: the early answer of the request's route and the route's name, or nil
    /// when the request is the router's (no early answer, or the early answer left it to the handler).
    /// By bytes over the path, allocating nothing for a route that captures nothing.
    public func answer(_ request: PreparedRequest) -> (handling: PreparedHandling, route: String)? {
        // A path that is a route of its own is never one of a pattern that captures (`shadowed`).
        if let indices = literal[request.path] {
            for index in indices where prepared[index].method == request.method {
                return prepared[index].route.early?(request, Parameters()).map { ($0, prepared[index].route.name) }
            }
            return nil
        }
        for index in captured where prepared[index].method == request.method {
            guard let parameters = Self.match(request.path, prepared[index].route, shadowed: prepared[index].shadowed),
                let handling = prepared[index].route.early?(request, parameters)
            else { continue }
            return (handling, prepared[index].route.name)
        }
        return nil
    }

    private static func match(_ path: Substring, _ route: Route, shadowed: [Int: [Substring]]) -> Parameters? {
        var parameters = Parameters()
        var rest = path.utf8[...]
        for (index, segment) in route.segments.enumerated() {
            guard rest.first == UInt8(ascii: "/") else { return nil }
            rest = rest.dropFirst()
            let end = rest.firstIndex(of: UInt8(ascii: "/")) ?? rest.endIndex
            let piece = Substring(rest[..<end])
            rest = rest[end...]
            if let segment {
                guard piece == segment else { return nil }
            } else {
                guard !piece.isEmpty, shadowed[index]?.contains(piece) != true else { return nil }
                if let name = route.captures[index] { parameters.append(key: name, value: piece) }
            }
        }
        return rest.isEmpty ? parameters : nil
    }

    /// The methods routed on `path`, on the pattern that wins for it: what a 405's `Allow` names.
    public func methods(on path: Substring) -> [HTTPRequest.Method] {
        let segments = path.split(separator: "/")
        let matching = routes.filter { route in
            route.segments.count == segments.count && zip(route.segments, segments).allSatisfy { $0 == nil || $0 == $1 }
        }
        let shapes = matching.map { route in route.segments.map { $0 == nil ? 1 : 0 } }
        guard let closest = shapes.min(by: { $0.lexicographicallyPrecedes($1) }) else { return [] }
        return zip(matching, shapes).filter { $0.1 == closest }.map(\.0.method)
    }
}
