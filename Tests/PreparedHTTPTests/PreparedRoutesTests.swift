import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import NIOEmbedded
import NIOHTTP1
import Testing

@testable import PreparedHTTP

/// A route declared once answers the same at both doors: the table the door before the router consults
/// is made from the router's own routes, and the router's handler from the same declaration.
@Suite struct PreparedRoutesTests {
    static let list = PreparedResponse(status: .ok, headers: [.contentType: "application/json"], body: ByteBuffer(string: #"{"results":[]}"#))

    /// GET /things from memory unless `?fresh`, POST and PUT /things/{id} deferred (echoing the id and the
    /// body), GET /things/latest and GET /things/{id} for the router alone, and a group with a middleware.
    static func routes() -> PreparedRoutes<BasicRequestContext> {
        let routes = PreparedRoutes(Router())
        let things = routes.group("things")
        things.on(
            method: .get, routes: routes, early: { request, _ in request.query == "fresh" ? nil : .answer(list) },
            use: { _, _ in Response(status: .ok, body: .init(byteBuffer: ByteBuffer(string: "fetched"))) })
        for method in [HTTPRequest.Method.post, .put] {
            things.on(method == .post ? "" : ":id", method: method, routes: routes) { request, parameters in
                let id = parameters.get("id") ?? "-"
                return .deferred(
                    PreparedDeferral(bodyLimit: 8) { body, _, _, _, answer in
                        let text = body.map { String(buffer: $0) } ?? "too large"
                        answer(PreparedResponse(status: .created, headers: [:], body: ByteBuffer(string: "\(request.method) \(id) \(text)")))
                    })
            }
        }
        things.get("latest") { _, _ in "latest" }
        things.get(":id") { _, context in context.parameters.get("id") ?? "" }
        return routes
    }

    func ask(_ table: RouteTable, _ method: HTTPMethod, _ target: String) -> (handling: PreparedHandling, route: String)? {
        table.answer(PreparedRequest(method: method, target: target, headers: [:]))
    }

    @Test func theDoorBeforeTheRouterTakesTheDeclaredRoutesUnderTheRoutersNames() throws {
        let table = Self.routes().table()
        #expect(ask(table, .GET, "/things?limit=1")?.route == "GET /things")
        #expect(ask(table, .POST, "/things")?.route == "POST /things")
        #expect(ask(table, .PUT, "/things/abc")?.route == "PUT /things/{id}")
        guard case .answer(let answer) = ask(table, .GET, "/things")?.handling else {
            Issue.record("GET /things is answered from memory")
            return
        }
        #expect(answer.body == Self.list.body)
    }

    @Test func whatTheDeclarationLeavesOrNeverDeclaredIsTheRouters() {
        let table = Self.routes().table()
        #expect(ask(table, .GET, "/things?fresh") == nil, "the early answer left it to the handler")
        #expect(ask(table, .GET, "/things/abc") == nil, "declared without an early answer")
        #expect(ask(table, .DELETE, "/things/abc") == nil, "no such route")
        #expect(ask(table, .PUT, "/things/abc/more") == nil)
        #expect(ask(table, .PUT, "/things/") == nil, "an empty capture")
        #expect(ask(table, .POST, "/things/")?.route == "POST /things", "a trailing slash is the same route, as in the router")
        #expect(ask(table, .POST, "/thingsx") == nil)
        #expect(ask(table, .GET, "/other") == nil)
    }

    @Test func aLiteralSegmentWinsOverACaptureAsInTheRouter() {
        let table = Self.routes().table()
        // /things/latest is a route of its own: a PUT there is the router's 405, not a PUT of a thing "latest".
        #expect(ask(table, .PUT, "/things/latest") == nil)
        #expect(ask(table, .PUT, "/things/latest2")?.route == "PUT /things/{id}")
        // HEAD is answered wherever GET is (`HeadAsItsGet`), and named after it.
        #expect(table.methods(on: "/things/latest") == [.get, .head])
        #expect(Set(table.methods(on: "/things/abc").map(\.rawValue)) == ["PUT", "GET", "HEAD"])
        #expect(Set(table.methods(on: "/things").map(\.rawValue)) == ["GET", "HEAD", "POST"])
        #expect(table.methods(on: "/nothing").isEmpty)
    }

    @Test func theRoutersDoorGivesTheSameAnswers() async throws {
        try await Application(router: Self.routes().router).test(.router) { client in
            let list = try await client.execute(uri: "/things", method: .get)
            #expect(list.status == .ok && String(buffer: list.body) == #"{"results":[]}"#)
            let fresh = try await client.execute(uri: "/things?fresh", method: .get)
            #expect(String(buffer: fresh.body) == "fetched")
            let posted = try await client.execute(uri: "/things", method: .post, body: ByteBuffer(string: "pin"))
            #expect(posted.status == .created && String(buffer: posted.body) == "POST - pin")
            let slashed = try await client.execute(uri: "/things/", method: .post, body: ByteBuffer(string: "pin"))
            #expect(slashed.status == .created, "a trailing slash is the same route")
            let edited = try await client.execute(uri: "/things/abc", method: .put, body: ByteBuffer(string: "moved"))
            #expect(String(buffer: edited.body) == "PUT abc moved")
            let tooLarge = try await client.execute(uri: "/things/abc", method: .put, body: ByteBuffer(string: "far too large"))
            #expect(String(buffer: tooLarge.body) == "PUT abc too large")
            let latest = try await client.execute(uri: "/things/latest", method: .get)
            #expect(String(buffer: latest.body) == "latest")
        }
    }
}

/// `RouteTable` resolves paths with Hummingbird's own trie, through its `@_spi(Internal)` builder: a
/// release of Hummingbird that changes how the trie resolves (literals over captures, `*` and `**`, suffix
/// and prefix captures, slashes, case) fails here, where both doors are asked the same paths, rather than
/// in production as a request one door routes and the other does not. Package.swift holds Hummingbird to
/// patch releases of its minor version while the SPI is used.
@Suite struct RouteTableResolutionTests {
    static let patterns = [
        "/pins", "/pins/latest", "/pins/:id", "/pins/:id/history", "/pins/{name}.geojson", "/files/*/raw", "/docs/**",
        "/maps/:slug/v1/pins", "/maps/:slug/v1/pins/:id", "/maps/:slug", "/maps/new/v1/pins/old", "/a/b/c", "/a/:x/c", "/a/b/:y",
    ]

    static let paths = [
        "/pins", "/pins/", "/pins/latest", "/pins/abc", "/pins/abc/", "/pins/abc/history", "/pins/abc/other", "/pins/world.geojson",
        "/files/one/raw", "/files/one/two/raw", "/docs/x/y/z", "/docs", "/files", "/maps/ios-2027/v1/pins", "/maps/ios-2027/v1/pins/abc",
        "/maps//v1/pins", "/a/b/c", "/a/q/c", "/a/b/q", "/a/q/q", "/PINS", "/pins/%41bc", "/nothing", "/",
        // A capture in the second segment: found by the table's own lookup unless another pattern spells that segment.
        "/maps/ios-2027", "/maps/ios-2027/", "/maps/ios-2027/v1/pins/", "/maps/ios%2D2027/v1/pins", "/maps/new/v1/pins",
        "/maps/new/v1/pins/old", "/maps/new", "/maps/ios-2027/v1", "/maps/ios-2027/v2/pins",
    ]

    /// The capture of a second segment is the router's, byte for byte, at the door before it.
    @Test func aCapturedSecondSegmentIsTheRoutersCapture() async throws {
        let routes = PreparedRoutes(Router())
        routes.on("/maps/:slug/v1/pins", method: .get, routes: routes) { _, parameters in
            .answer(PreparedResponse(status: .ok, headers: [:], body: ByteBuffer(string: parameters.get("slug") ?? "-")))
        }
        let table = routes.table()
        try await Application(router: routes.router).test(.router) { client in
            for slug in ["ios-2027", "a", "UPPER", "x.y", "ünï"] {
                let path = "/maps/\(slug)/v1/pins"
                let routed = try await client.execute(uri: path, method: .get)
                guard let early = table.answer(PreparedRequest(method: .GET, target: path, headers: [:])), case .answer(let answer) = early.handling
                else {
                    Issue.record("\(path): not answered before the router")
                    continue
                }
                #expect(answer.body.map { String(buffer: $0) } == String(buffer: routed.body), "\(path)")
                #expect(early.route == "GET /maps/{slug}/v1/pins")
            }
        }
    }

    /// Each pattern answers its own name at both doors.
    static func routes() -> PreparedRoutes<BasicRequestContext> {
        let routes = PreparedRoutes(Router())
        for pattern in patterns {
            let named = PreparedResponse(status: .ok, headers: [:], body: ByteBuffer(string: pattern))
            routes.on(RouterPath(pattern), method: .get, routes: routes) { _, _ in .answer(named) }
        }
        return routes
    }

    @Test func theTableBeforeTheRouterResolvesEveryPathAsTheRouterDoes() async throws {
        let routes = Self.routes()
        let table = routes.table()
        try await Application(router: routes.router).test(.router) { client in
            var resolved = 0
            for path in Self.paths {
                let early = table.answer(PreparedRequest(method: .GET, target: path, headers: [:]))
                let routed = try await client.execute(uri: path, method: .get)
                let byRouter = routed.status == .ok ? String(buffer: routed.body) : nil
                var byTable: String?
                if let early, case .answer(let response) = early.handling { byTable = response.body.map { String(buffer: $0) } }
                #expect(byTable == byRouter, "\(path): the table resolves \(byTable ?? "nothing"), the router \(byRouter ?? "nothing")")
                if byRouter != nil { resolved += 1 }
            }
            #expect(resolved >= Self.patterns.count, "the paths asked reach every pattern")
        }
    }
}

/// A stream through the router's door: the same opening decides, and its chunks are the response body.
@Suite struct RoutedStreamTests {
    static func routes() -> PreparedRoutes<BasicRequestContext> {
        let routes = PreparedRoutes(Router())
        routes.on("stream", method: .get, routes: routes) { request, _ in
            let refuse = request.header(HTTPField.Name("X-Refuse")!) != nil
            return .stream(
                PreparedStreamOpening(headers: [.contentType: "text/event-stream"]) { stream in
                    if refuse { return .refused(PreparedResponse(status: .tooManyRequests, headers: [:], body: ByteBuffer(string: "no"))) }
                    return .admitted {
                        stream.write(PreparedStream.Chunk(ByteBuffer(string: "hello ")))
                        stream.write(PreparedStream.Chunk(ByteBuffer(string: "world")))
                        stream.finish()
                    }
                })
        }
        return routes
    }

    @Test func anAdmittedStreamIsTheBodyAndARefusedOneItsAnswer() async throws {
        try await Application(router: Self.routes().router).test(.router) { client in
            let admitted = try await client.execute(uri: "/stream", method: .get)
            #expect(admitted.status == .ok && admitted.headers[.contentType] == "text/event-stream")
            #expect(String(buffer: admitted.body) == "hello world")
            let refused = try await client.execute(uri: "/stream", method: .get, headers: [HTTPField.Name("X-Refuse")!: "1"])
            #expect(refused.status == .tooManyRequests && String(buffer: refused.body) == "no")
        }
    }

    @Test func aRoutedStreamWhoseWriterFallsBehindIsNoLongerWritable() throws {
        let loop = EmbeddedEventLoop()
        let body = RoutedBody(eventLoop: loop)
        let stream = PreparedStream(body: body, eventLoop: loop, remoteAddress: nil)
        let chunk = PreparedStream.Chunk(ByteBuffer(repeating: 0x61, count: 16 * 1024))
        for _ in 0..<3 { stream.write(chunk) }
        #expect(stream.isWritable, "48 KiB unsent")
        stream.write(chunk)
        #expect(!stream.isWritable, "64 KiB unsent: the live stream lets a client this slow go")
        stream.abort()
        #expect(!stream.isOpen)
    }
}
