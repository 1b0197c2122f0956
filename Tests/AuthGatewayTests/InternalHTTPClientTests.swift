import HTTPTypes
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import TestSupport
import Testing

@testable import AuthGateway

/// The gateway's client for its hop to locations-service, against a scripted HTTP server on loopback:
/// whole answers, kept-alive connections, and every way an answer can fail to come.
@Suite struct InternalHTTPClientTests {
    @Test func anAnswerArrivesWholeAndTheConnectionIsKeptForTheNext() async throws {
        let server = try await ScriptedServer.start { request in
            let json = "{\"got\":\"\(request.body)\"}"
            return .answer("HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: \(json.utf8.count)\r\n\r\n" + json)
        }
        let client = InternalHTTPClient(endpoint: server.endpoint)
        // Connections are kept per event loop, so that an answer arrives on the loop that asked.
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        for body in ["a", "b", "c"] {
            let answer = try await client.execute(
                method: .POST, target: "/v1/pins?x=1", headers: [.contentType: "application/json"],
                body: ByteBuffer(string: "{\(body)}"), timeout: .seconds(2), on: loop
            ).get()
            #expect(answer.status == 201)
            #expect(answer.headers[.contentType] == "application/json")
            #expect(String(buffer: answer.body) == "{\"got\":\"{\(body)}\"}")
        }
        #expect(server.connections == 1)
        let request = try #require(server.requests.last)
        #expect(request.head.hasPrefix("POST /base/v1/pins?x=1 HTTP/1.1\r\n"))
        #expect(request.head.contains("\r\nHost: 127.0.0.1:\(server.port)\r\n"))
        #expect(request.head.contains("\r\nContent-Length: 3\r\n"))
    }

    /// The request goes out as written here, byte for byte: the request line, the hop's `Host`, the fields in
    /// their order (a `Host`, `Content-Length` or `Transfer-Encoding` among them is the hop's own to write),
    /// the body's length.
    /// An answer to a HEAD has no body, whatever length it announces.
    @Test func theRequestIsWrittenByteForByteAndAHeadAnswerHasNoBody() async throws {
        let server = try await ScriptedServer.start { request in
            request.head.hasPrefix("HEAD ")
                ? .answer("HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\n") : .answer("HTTP/1.1 204 No Content\r\n\r\n")
        }
        let client = InternalHTTPClient(endpoint: server.endpoint)
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let headers: HTTPFields = [
            .contentType: "application/json", .host: "elsewhere.example", .contentLength: "99", .transferEncoding: "chunked",
            .userAgent: "OnTheMap/2 (iPhone)",
        ]
        let posted = try await client.execute(
            method: .POST, target: "/v1/pins", headers: headers, body: ByteBuffer(string: "{\"a\":1}"), timeout: .seconds(2), on: loop
        ).get()
        #expect(posted.status == 204)
        let head = try await client.execute(method: .HEAD, target: "/v1/pins?limit=1", headers: [:], body: nil, timeout: .seconds(2), on: loop).get()
        #expect(head.status == 200)
        #expect(head.body.readableBytes == 0)
        let gotten = try await client.execute(method: .GET, target: "/", headers: [:], body: nil, timeout: .seconds(2), on: loop).get()
        #expect(gotten.status == 204)
        let host = "127.0.0.1:\(server.port)"
        #expect(
            server.requests.map(\.head) == [
                "POST /base/v1/pins HTTP/1.1\r\nHost: \(host)\r\nContent-Type: application/json\r\nUser-Agent: OnTheMap/2 (iPhone)\r\n"
                    + "Content-Length: 7\r\n",
                "HEAD /base/v1/pins?limit=1 HTTP/1.1\r\nHost: \(host)\r\n",
                "GET /base/ HTTP/1.1\r\nHost: \(host)\r\n",
            ])
        #expect(server.requests.map(\.body) == ["{\"a\":1}", "", ""])
        #expect(server.connections == 1)
    }

    @Test func aConnectionTheServiceClosesIsNotUsedAgain() async throws {
        let server = try await ScriptedServer.start { _ in
            .answer("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}", thenClose: true)
        }
        let client = InternalHTTPClient(endpoint: server.endpoint)
        for _ in 0..<3 {
            let answer = try await client.execute(method: .GET, target: "/", headers: [:], body: nil, timeout: .seconds(2)).get()
            #expect(String(buffer: answer.body) == "{}")
        }
        #expect(server.connections == 3)
    }

    @Test func aSilentServiceFailsTheRequestWhenItsTimeIsUp() async throws {
        let server = try await ScriptedServer.start { _ in .silence }
        let client = InternalHTTPClient(endpoint: server.endpoint)
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let started = ContinuousClock.now
        await #expect(throws: InternalHTTPClient.Failure.timedOut) {
            try await client.execute(method: .GET, target: "/", headers: [:], body: nil, timeout: .milliseconds(300), on: loop).get()
        }
        let waited = ContinuousClock.now - started
        #expect(waited >= .milliseconds(300) && waited < .seconds(2))
        // The connection that timed out is closed rather than given to the next request, which opens another.
        _ = try? await client.execute(method: .GET, target: "/", headers: [:], body: nil, timeout: .milliseconds(100), on: loop).get()
        // (The server reads it in its own time: the test machine may be busy.)
        #expect(await server.received(2, within: .seconds(5)))
        #expect(server.requests.count == 2)
        #expect(server.connections == 2)
    }

    /// A kept-alive connection is timed by the deadline of the exchange under way, whatever the exchanges
    /// before it on the same connection allowed themselves: a shorter limit than theirs still holds, and a
    /// longer one is not cut short by theirs.
    @Test func eachExchangeOnAKeptConnectionHasItsOwnTimeLimit() async throws {
        let server = try await ScriptedServer.start { request in
            if request.head.hasPrefix("GET /base/late ") {
                return .answer("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nlate", after: .milliseconds(500))
            }
            if request.head.hasPrefix("GET /base/silent ") { return .silence }
            return .answer("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")
        }
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        func get(_ client: InternalHTTPClient, _ target: String, within limit: TimeAmount) async throws -> String {
            String(buffer: try await client.execute(method: .GET, target: target, headers: [:], body: nil, timeout: limit, on: loop).get().body)
        }

        // 300 ms, answered at once; then 2 s on the same connection, answered after 500 ms.
        let first = InternalHTTPClient(endpoint: server.endpoint)
        #expect(try await get(first, "/", within: .milliseconds(300)) == "{}")
        #expect(try await get(first, "/late", within: .seconds(2)) == "late", "cut short by the limit of the exchange before")

        // 30 s, answered at once; then 300 ms on the same connection, never answered.
        let second = InternalHTTPClient(endpoint: server.endpoint)
        #expect(try await get(second, "/", within: .seconds(30)) == "{}")
        let started = ContinuousClock.now
        await #expect(throws: InternalHTTPClient.Failure.timedOut) { try await get(second, "/silent", within: .milliseconds(300)) }
        let waited = ContinuousClock.now - started
        #expect(waited >= .milliseconds(300) && waited < .seconds(5), "timed by the 30 s of the exchange before")
        #expect(server.connections == 2)
    }

    @Test func aConnectionClosedBeforeTheAnswerEndsFailsTheRequest() async throws {
        let server = try await ScriptedServer.start { _ in .answer("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"cut", thenClose: true) }
        let client = InternalHTTPClient(endpoint: server.endpoint)
        await #expect(throws: (any Error).self) {
            try await client.execute(method: .GET, target: "/", headers: [:], body: nil, timeout: .seconds(2)).get()
        }
    }

    @Test func aServiceNobodyListensOnFailsAtOnce() async throws {
        let server = try await ScriptedServer.start { _ in .silence }
        let endpoint = server.endpoint
        try await server.stop()
        let started = ContinuousClock.now
        await #expect(throws: (any Error).self) {
            try await InternalHTTPClient(endpoint: endpoint).execute(method: .GET, target: "/", headers: [:], body: nil, timeout: .seconds(5)).get()
        }
        #expect(ContinuousClock.now - started < .seconds(2))
    }

    @Test func anAnswerPastTheLimitIsRefused() async throws {
        let server = try await ScriptedServer.start { _ in
            .answer("HTTP/1.1 200 OK\r\nContent-Length: 20\r\n\r\n" + String(repeating: "x", count: 20))
        }
        let client = InternalHTTPClient(endpoint: server.endpoint, maximumAnswer: 10)
        await #expect(throws: InternalHTTPClient.Failure.answerTooLarge) {
            try await client.execute(method: .GET, target: "/", headers: [:], body: nil, timeout: .seconds(2)).get()
        }
    }

    @Test func manyConcurrentRequestsOnOneLoopShareABoundedNumberOfConnections() async throws {
        let server = try await ScriptedServer.start { request in
            .answer("HTTP/1.1 200 OK\r\nContent-Length: \(request.body.utf8.count)\r\n\r\n" + request.body)
        }
        let client = InternalHTTPClient(endpoint: server.endpoint, maximumConnections: 3)
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let answers = try await withThrowingTaskGroup(of: (Int, String).self) { group in
            for index in 0..<60 {
                group.addTask {
                    let answer = try await client.execute(
                        method: .POST, target: "/", headers: [:], body: ByteBuffer(string: "\(index)"),
                        timeout: .seconds(5), on: loop
                    ).get()
                    return (index, String(buffer: answer.body))
                }
            }
            return try await group.reduce(into: [:]) { $0[$1.0] = $1.1 }
        }
        #expect(answers.count == 60)
        #expect(answers.allSatisfy { "\($0.key)" == $0.value }, "each request got its own answer")
        #expect(server.connections <= 3, "\(server.connections) connections for a limit of 3")
    }

    @Test func aPooledConnectionThatDiedWithTheServiceIsReplacedNotUsed() async throws {
        // Kept alive by the answer, then gone: what a pooled connection sees when locations-service restarts.
        let server = try await ScriptedServer.start { _ in .answer("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}", thenClose: true) }
        let client = InternalHTTPClient(endpoint: server.endpoint, maximumConnections: 1)
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        for _ in 0..<3 {
            let answer = try await client.execute(method: .GET, target: "/", headers: [:], body: nil, timeout: .seconds(2), on: loop).get()
            #expect(String(buffer: answer.body) == "{}")
            // The next request is sent once the pool has seen the service close this connection.
            let closed = try await waitFor(within: .seconds(2)) { try await client.openConnections(on: loop).get() == 0 }
            #expect(closed != nil)
        }
        #expect(server.connections == 3)
    }

    @Test func aConnectionIdleForLongIsClosedBeforeTheServiceClosesItAndNotUsed() async throws {
        let server = try await ScriptedServer.start { _ in .answer("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}") }
        let now = NIOLockedValueBox(NIODeadline.now())
        let client = InternalHTTPClient(endpoint: server.endpoint, idleLifetime: .milliseconds(300), now: { now.withLockedValue { $0 } })
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        for pause in [0, 50, 600, 50] {
            now.withLockedValue { $0 = $0 + .milliseconds(Int64(pause)) }
            let answer = try await client.execute(method: .GET, target: "/", headers: [:], body: nil, timeout: .seconds(2), on: loop).get()
            #expect(String(buffer: answer.body) == "{}")
        }
        // Reused after 50 ms, replaced after 600 ms, reused again.
        #expect(server.connections == 2)
    }

    @Test func onlyPlainHTTPAddressesAreEndpoints() {
        #expect(InternalHTTPClient.Endpoint(url: "http://locations:8081") == InternalHTTPClient.Endpoint(url: "http://locations:8081/"))
        #expect(InternalHTTPClient.Endpoint(url: "http://locations")?.port == 80)
        #expect(InternalHTTPClient.Endpoint(url: "http://locations:8081/base/")?.basePath == "/base")
        for refused in ["https://locations:8081", "locations:8081", "http://", "http://a:1/?q=1", "ftp://a"] {
            #expect(InternalHTTPClient.Endpoint(url: refused) == nil, "\(refused)")
        }
    }
}

/// An HTTP/1.1 server on loopback that answers each request as its script says, and keeps count.
final class ScriptedServer: Sendable {
    struct Request: Sendable {
        let head: String
        let body: String
    }

    enum Reply: Sendable {
        case answer(String, thenClose: Bool = false, after: TimeAmount = .zero)
        case silence
    }

    struct Log: Sendable {
        var connections = 0
        var requests: [Request] = []
    }

    let port: Int
    private let channel: any Channel
    private let log: Watched<Log>

    var endpoint: InternalHTTPClient.Endpoint { InternalHTTPClient.Endpoint(url: "http://127.0.0.1:\(port)/base")! }
    var connections: Int { log.value.connections }
    var requests: [Request] { log.value.requests }

    /// Whether `count` requests have come in, now or within `limit`.
    func received(_ count: Int, within limit: Duration) async -> Bool {
        await log.wait(within: limit) { $0.requests.count >= count }
    }

    private init(channel: any Channel, log: Watched<Log>) {
        self.channel = channel
        port = channel.localAddress!.port!
        self.log = log
    }

    static func start(_ script: @escaping @Sendable (Request) -> Reply) async throws -> ScriptedServer {
        let log = Watched(Log())
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { channel in
                log.update { $0.connections += 1 }
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ScriptHandler(script: script, log: log))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return ScriptedServer(channel: channel, log: log)
    }

    func stop() async throws { try await channel.close() }

    deinit { channel.close(promise: nil) }

    private final class ScriptHandler: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer

        let script: @Sendable (Request) -> Reply
        let log: Watched<Log>
        var received = ""

        init(script: @escaping @Sendable (Request) -> Reply, log: Watched<Log>) {
            self.script = script
            self.log = log
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            received += String(buffer: unwrapInboundIn(data))
            // One request at a time: the head, then as many body bytes as it announces.
            while let end = received.range(of: "\r\n\r\n") {
                let head = String(received[..<end.lowerBound])
                let length =
                    head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
                    .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
                let rest = received[end.upperBound...]
                guard rest.utf8.count >= length else { return }
                let body = String(rest.utf8.prefix(length))!
                received = String(rest.utf8.dropFirst(length))!
                let request = Request(head: head + "\r\n", body: body)
                log.update { $0.requests.append(request) }
                switch script(request) {
                case .answer(let text, let close, let delay):
                    let answer = NIOLoopBound(context, eventLoop: context.eventLoop)
                    let send: @Sendable () -> Void = {
                        answer.value.writeAndFlush(NIOAny(ByteBuffer(string: text)), promise: nil)
                        if close { answer.value.close(promise: nil) }
                    }
                    if delay == .zero { send() } else { context.eventLoop.scheduleTask(in: delay, send) }
                case .silence:
                    break
                }
            }
        }
    }
}
