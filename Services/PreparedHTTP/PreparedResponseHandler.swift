import HTTPTypes
import Logging
import NIOCore
import NIOHTTP1
import ServerTransport

/// Answers the requests its `prepared` closure takes, and passes every other one on to the router; it
/// performs what `PreparedConnectionState` decides.
///
/// Its answers are rendered to bytes here and written below NIO's HTTP encoder, which would otherwise
/// build a header list and check its framing for every one of them: the list's answer never changes
/// between requests but for the date. The headers every answer carries are added here to both doors'
/// answers (`AnswerHeaders`), and both are reported to `answered`.
public final class PreparedResponseHandler: ChannelDuplexHandler, RemovableChannelHandler, ConnectionHolding {
    public typealias InboundIn = HTTPServerRequestPart
    public typealias InboundOut = HTTPServerRequestPart
    public typealias OutboundIn = HTTPServerResponsePart
    public typealias OutboundOut = HTTPServerResponsePart

    /// Told of each answer the handler writes: its route (method and path pattern), status and start.
    public typealias Answered = @Sendable (_ route: String, _ status: HTTPResponse.Status, _ since: ContinuousClock.Instant) -> Void

    private var state: PreparedConnectionState
    private let headers: AnswerHeaders
    private let answered: Answered
    private let logger: Logger
    /// Told of every part read and every part of the router's answers written, before this handler acts.
    private let watcher: (any RequestPartWatcher)?
    /// Whose `X-Forwarded-Proto` is believed; nil when nobody's is.
    private let forwarded: ForwardedScheme?
    /// The connection comes from a proxy `forwarded` trusts: each request's scheme is the one it names.
    private var fromTrustedProxy = false
    /// The request being answered reached its client over HTTPS, by the trusted proxy's word.
    private var forwardedHTTPS = false
    /// The route and start of the request this handler is answering, for `answered`.
    private var taken: (route: String, since: ContinuousClock.Instant)?
    /// Where rendered answers enter the pipeline: just below the HTTP encoder (or this handler's own
    /// place when there is none, as in a test's bare channel).
    private var output: ChannelHandlerContext?
    /// The stream this connection serves, once one is open: nothing else is answered on it after that.
    private var stream: PreparedStream?
    /// Who holds the connection from its first turn on; completed once (`holder`).
    private var holding: EventLoopPromise<ConnectionHolder>?
    /// Completes when the connection's first turn has come: a stream opened, or anything for the router.
    public private(set) var holder: EventLoopFuture<ConnectionHolder>?
    /// A part has been passed on to the router since the end of a read was last passed on.
    private var routedSinceReadComplete = false

    /// `secure`: the connection is TLS to this server, so every answer carries `Strict-Transport-Security`;
    /// `forwarded`: the proxies whose word on the client's scheme is taken, request by request; `watcher`: the
    /// handler in front of this one that follows the connection's requests and answers.
    public init(
        serverName: String, logger: Logger, secure: Bool = false, forwarded: ForwardedScheme? = nil,
        watcher: (any RequestPartWatcher)? = nil, prepared: @escaping PreparedAnswer, answered: @escaping Answered
    ) {
        state = PreparedConnectionState(prepared: prepared)
        headers = AnswerHeaders(serverName: serverName, secure: secure)
        self.answered = answered
        self.logger = logger
        self.watcher = watcher
        self.forwarded = forwarded
    }

    public func handlerAdded(context: ChannelHandlerContext) {
        fromTrustedProxy = forwarded?.trusts(context.channel.remoteAddress) ?? false
        state.peer = context.channel.remoteAddress
        output = try? context.pipeline.syncOperations.context(handlerType: HTTPResponseEncoder.self)
        let holding = context.eventLoop.makePromise(of: ConnectionHolder.self)
        self.holding = holding
        holder = holding.futureResult
    }

    public func handlerRemoved(context: ChannelHandlerContext) {
        output = nil
        hand(to: .router)
    }

    /// Settles who holds the connection, the first time only.
    private func hand(to holder: ConnectionHolder) {
        holding?.succeed(holder)
        holding = nil
    }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        watcher?.read(part)
        let action = state.receive(part)
        if fromTrustedProxy, case .take = action, case .head(let head) = part {
            forwardedHTTPS = ForwardedScheme.isHTTPS(head.headers[canonicalForm: ForwardedScheme.header]) ?? false
        }
        perform(action, context: context)
    }

    private func perform(_ action: PreparedConnectionState.Action, context: ChannelHandlerContext) {
        switch action {
        case .route(let part):
            hand(to: .router)
            routedSinceReadComplete = true
            context.fireChannelRead(wrapInboundOut(part))
        case .continueAndRoute(let part):
            (output ?? context).writeAndFlush(NIOAny(context.channel.allocator.buffer(staticString: "HTTP/1.1 100 Continue\r\n\r\n")), promise: nil)
            perform(.route(part), context: context)
        case .none:
            break
        case .take(let route):
            logger.debug("answered before the router", metadata: ["hb.request.route": "\(route)"])
            taken = (route, .now)
        case .answer(let answer):
            write(answer, context: context)
        case .respond(let deferral, let body):
            let eventLoop = context.eventLoop
            let handler = NIOLoopBound(self, eventLoop: eventLoop)
            let loopContext = NIOLoopBound(context, eventLoop: eventLoop)
            deferral.respond(body, eventLoop, context.channel.remoteAddress, .topLevel) { answer in
                guard eventLoop.inEventLoop else {
                    return eventLoop.execute { handler.value.write(answer, context: loopContext.value) }
                }
                handler.value.write(answer, context: loopContext.value)
            }
        case .open(let opening):
            let stream = PreparedStream(channel: context.channel, output: output ?? context)
            switch opening.open(stream) {
            case .refused(let answer):
                write(answer, context: context)
            case .admitted(let started):
                self.stream = stream
                Self.stopParsing(context)
                context.triggerUserOutboundEvent(PreparedStreamOpened(), promise: nil)
                write(head: .streamHead(headers: opening.headers), context: context)
                started()
                hand(to: .stream)
            }
        }
    }

    /// A stream's connection takes no request after the one that opened it: the HTTP parser, with what it
    /// keeps of that request (about 2 KB, a quarter of what an open stream costs), gives way to a handler that
    /// drops whatever the client still sends. Its end and its errors pass on as before, so the stream still
    /// ends with it; and since nothing is held back any more, the connection is read until it closes.
    private static func stopParsing(_ context: ChannelHandlerContext) {
        let pipeline = context.pipeline.syncOperations
        guard let parser = try? pipeline.handler(type: ByteToMessageHandler<HTTPRequestDecoder>.self),
            (try? pipeline.addHandler(DroppedInbound(), position: .before(parser))) != nil
        else { return }
        pipeline.removeHandler(parser, promise: nil)
    }

    /// The head of a stream's answer, reported as answered when it is written: the stream's body never ends.
    private func write(head: PreparedResponse, context: ChannelHandlerContext) {
        (output ?? context).writeAndFlush(NIOAny(headers.render(head, secure: forwardedHTTPS, allocator: context.channel.allocator)), promise: nil)
        if let taken { answered(taken.route, head.status, taken.since) }
        taken = nil
    }

    /// Writes an answer of this handler's, then goes on with what arrived meanwhile (or, when the server is
    /// shutting down, lets the connection close).
    private func write(_ answer: PreparedResponse, context: ChannelHandlerContext) {
        let output = self.output ?? context
        if let whole = headers.whole(answer, secure: forwardedHTTPS, allocator: context.channel.allocator) {
            output.write(NIOAny(whole), promise: nil)
        } else {
            output.write(NIOAny(headers.render(answer, secure: forwardedHTTPS, allocator: context.channel.allocator)), promise: nil)
            if let body = answer.body { output.write(NIOAny(body), promise: nil) }
        }
        output.flush()
        if let taken { answered(taken.route, answer.status, taken.since) }
        taken = nil
        switch state.answerWritten() {
        case .passShutdownOn:
            context.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        case .goOn:
            while let part = state.nextHeld() { perform(state.receive(part), context: context) }
            // The router's side takes what it is passed at the end of a read (NIO's asynchronous channel
            // delivers its reads at `channelReadComplete`), and held parts were read long before: without
            // an end of their own they would wait for the client's next bytes, which a pipelining client
            // does not send until it has its answers.
            channelReadComplete(context: context)
            if state.resumeReading() { context.read() }
        }
    }

    public func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // A stream ends with the server, which would otherwise wait for it for as long as its client stays,
        // and when its client stops sending: no task reads the connection's end to close it.
        if let stream, event is ChannelShouldQuiesceEvent || (event as? ChannelEvent) == .inputClosed {
            stream.finish()
            return
        }
        if event is ChannelShouldQuiesceEvent, !state.shutdownRequested() { return }
        hand(to: .router)
        context.fireUserInboundEventTriggered(event)
    }

    // What reaches the router's side is read by the task that holds the connection there.

    /// The end of a read matters after this handler only to the router's side, which takes the parts it was
    /// passed at that end: a read this handler answered whole passes nothing on, and neither does its end
    /// (the handlers after this one would each be called for nothing, for every answer).
    public func channelReadComplete(context: ChannelHandlerContext) {
        guard routedSinceReadComplete else { return }
        routedSinceReadComplete = false
        context.fireChannelReadComplete()
    }

    public func errorCaught(context: ChannelHandlerContext, error: any Error) {
        hand(to: .router)
        context.fireErrorCaught(error)
    }

    public func channelInactive(context: ChannelHandlerContext) {
        hand(to: .router)
        context.fireChannelInactive()
    }

    public func read(context: ChannelHandlerContext) {
        if state.readRequested() { context.read() }
    }

    public func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let part = unwrapOutboundIn(data)
        watcher?.wrote(part)
        switch part {
        case .head(var head):
            // An interim `100 Continue` is not an answer yet.
            if head.status.code >= 200 { headers.stamp(&head) }
            context.write(wrapOutboundOut(.head(head)), promise: promise)
        case .body:
            context.write(state.routedAnswerIsHeadOnly ? nothing : data, promise: promise)
        case .end:
            let part = state.routedAnswerIsHeadOnly ? nothing : data
            state.routedAnswerEnded()
            context.write(part, promise: promise)
        }
    }

    /// What is written in place of a body part or end of an answer to a HEAD, which has the head a GET would
    /// have had and no body (RFC 9110 §9.3.2), nor the last chunk of a chunked one: the encoder is not told
    /// which requests the router answers (`HTTP1ServerChannel`), so they are left out here. An
    /// empty part in their place keeps the writes' promises in order.
    private var nothing: NIOAny {
        wrapOutboundOut(.body(.byteBuffer(ByteBuffer())))
    }
}

/// A handler in front of `PreparedResponseHandler` that follows a connection's requests and answers part by
/// part: the handler, which opens every part anyway, tells it of each, rather than each part being opened a
/// second time (a part passes between handlers type-erased, and opening one is a dynamic cast: about 470
/// instructions, two to four times a request).
public protocol RequestPartWatcher: AnyObject {
    /// A part of a request has been read, in the order read, before anything is done with it.
    func read(_ part: HTTPServerRequestPart)
    /// A part of an answer from the router is about to be written.
    func wrote(_ part: HTTPServerResponsePart)
}

/// Drops the bytes a stream's client sends after its request (`PreparedResponseHandler.stopParsing`).
final class DroppedInbound: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}
}
