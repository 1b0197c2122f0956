import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import OnTheMapShared

/// What the browser brought back to the loopback address: the gateway's one-time code, or why the sign-in
/// failed.
public enum LoopbackCallback: Sendable, Hashable {
    case code(String)
    /// The gateway's reason, on one line, without control characters (it came from a URL anyone could craft).
    case error(String)
}

/// RFC 8252 §7.3's loopback redirect: an HTTP listener on `127.0.0.1` and a port the system picks, where the
/// browser comes back from a sign-in. The first `GET` of `path` with a `code` or an `error` is the callback;
/// anything else (a browser's `/favicon.ico`) gets a small page and is otherwise ignored.
public final class LoopbackRedirect: Sendable {
    public static let path = "/callback"
    /// `http://127.0.0.1:PORT/callback`: the address to send the browser back to.
    public let uri: String
    private let channel: any Channel
    private let callbacks: AsyncStream<LoopbackCallback>
    private let continuation: AsyncStream<LoopbackCallback>.Continuation

    private init(channel: any Channel, callbacks: AsyncStream<LoopbackCallback>, continuation: AsyncStream<LoopbackCallback>.Continuation) {
        self.channel = channel
        self.callbacks = callbacks
        self.continuation = continuation
        uri = "http://127.0.0.1:\(channel.localAddress?.port ?? 0)\(Self.path)"
    }

    /// Listens until `close`.
    public static func start() async throws -> LoopbackRedirect {
        // Only the first callback is kept: a second one (a reload, another tab) cannot replace it.
        let (callbacks, continuation) = AsyncStream.makeStream(of: LoopbackCallback.self, bufferingPolicy: .bufferingOldest(1))
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandler(LoopbackHandler { continuation.yield($0) })
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return LoopbackRedirect(channel: channel, callbacks: callbacks, continuation: continuation)
    }

    /// The callback, once the browser brings it; nil when it has not come within `timeout` of `clock`.
    public func callback<C: Clock>(within timeout: C.Duration, clock: C) async -> LoopbackCallback? {
        await withTaskGroup(of: LoopbackCallback?.self) { group in
            group.addTask { await self.callbacks.first { _ in true } }
            group.addTask {
                try? await clock.sleep(for: timeout)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }

    public func callback(within timeout: Duration) async -> LoopbackCallback? {
        await callback(within: timeout, clock: ContinuousClock())
    }

    /// Stops listening.
    public func close() {
        continuation.finish()
        channel.close(promise: nil)
    }
}

/// One request to the loopback address: what it brings, and the page it is answered with. A value, decided
/// without a socket; `LoopbackHandler` only reads requests and writes these answers.
struct LoopbackRequest: Equatable {
    var callback: LoopbackCallback?
    var status: HTTPResponseStatus
    var page: String

    init(method: HTTPMethod, target: String) {
        let url = URLComponents(string: target)
        guard method == .GET, let url, url.path == LoopbackRedirect.path else {
            callback = nil
            status = .notFound
            page = Self.page("Not found", "This address only takes the answer of an On The Map sign-in.")
            return
        }
        let items = url.queryItems ?? []
        func value(_ name: String) -> String? { items.first { $0.name == name }?.value.flatMap { $0.isEmpty ? nil : $0 } }
        if let code = value("code") {
            callback = .code(code)
            status = .ok
            page = Self.page("Signed in", "You are signed in to On The Map; you can close this tab.")
        } else if let error = value("error") {
            let reason = Self.oneLine(error)
            callback = .error(reason)
            status = .ok
            page = Self.page("Sign-in failed", "The sign-in to On The Map failed: \(reason) You can close this tab.")
        } else {
            callback = nil
            status = .badRequest
            page = Self.page("No sign-in", "This address takes the answer of an On The Map sign-in, with a code or an error.")
        }
    }

    /// Control characters (a newline, an escape sequence for the terminal) become spaces, and the text is cut
    /// at 500 characters: the reason is shown on one line of the terminal.
    static func oneLine(_ text: String) -> String {
        let scalars = text.unicodeScalars.map { $0.properties.generalCategory == .control ? " " : Character($0) }
        let line = String(scalars).trimmingCharacters(in: .whitespaces)
        return line.count > 500 ? String(line.prefix(500)) + "…" : line
    }

    static func page(_ title: String, _ message: String) -> String {
        """
        <!doctype html>
        <html lang="en"><head><meta charset="utf-8"><title>On The Map: \(HTMLEscaping.escaped(title))</title></head>
        <body><p>\(HTMLEscaping.escaped(message))</p></body></html>

        """
    }
}

/// Answers each request with its `LoopbackRequest` page, passes on a callback, and closes the connection.
final class LoopbackHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let deliver: @Sendable (LoopbackCallback) -> Void
    private var head: HTTPRequestHead?

    init(deliver: @escaping @Sendable (LoopbackCallback) -> Void) {
        self.deliver = deliver
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head): self.head = head
        case .body: break
        case .end:
            guard let head else { return }
            self.head = nil
            let request = LoopbackRequest(method: head.method, target: head.uri)
            if let callback = request.callback { deliver(callback) }
            respond(context: context, request, version: head.version)
        }
    }

    private func respond(context: ChannelHandlerContext, _ request: LoopbackRequest, version: HTTPVersion) {
        let body = context.channel.allocator.buffer(string: request.page)
        let headers = HTTPHeaders([
            ("Content-Type", "text/html; charset=utf-8"), ("Content-Length", String(body.readableBytes)), ("Cache-Control", "no-store"),
            ("Content-Security-Policy", "default-src 'none'"), ("Referrer-Policy", "no-referrer"), ("Connection", "close"),
        ])
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: version, status: request.status, headers: headers))), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
