import HTTPTypes
import NIOCore
import NIOHTTP1
import NIOHTTPTypes

/// The door before the router on an HTTP/2 stream (one request each): a request that `prepared` answers from
/// memory is answered here, as its stream's frames are read, with the same answer the door on HTTP/1.1 gives;
/// every other one (a body to work out first, a live stream, a route of the router's own) goes on to the
/// router, whose door of each prepared route answers it the same.
///
/// On the router's path each stream costs a task, request and response objects and an asynchronous writer,
/// and each answer is flushed to the socket on its own once that task gets to it. Answered here, while the
/// connection's read is still going on, the answers of all the streams one read brought leave together.
public final class PreparedStreamAnswers: ChannelInboundHandler, RemovableChannelHandler {
    public typealias InboundIn = HTTPRequestPart
    public typealias InboundOut = HTTPRequestPart
    public typealias OutboundOut = HTTPResponsePart

    private enum Reading {
        /// Nothing read yet.
        case head
        /// Taken: answered once the request's end arrives (a body it has is not read).
        case taken(PreparedResponse, route: String, since: ContinuousClock.Instant)
        /// Answered; whatever still arrives is dropped.
        case answered
        /// The router's: passed on as it arrives.
        case routing
    }

    private let prepared: PreparedAnswer
    private let answered: PreparedResponseHandler.Answered
    private var reading = Reading.head

    public init(prepared: @escaping PreparedAnswer, answered: @escaping PreparedResponseHandler.Answered) {
        self.prepared = prepared
        self.answered = answered
    }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch (reading, unwrapInboundIn(data)) {
        case (.head, .head(let request)):
            // A body announced with `Expect: 100-continue` is left to the router, as on HTTP/1.1.
            guard !request.headerFields.contains(.expect),
                let (handling, route) = prepared(PreparedRequest(request, peer: context.channel.parent?.remoteAddress)),
                case .answer(let answer) = handling
            else {
                reading = .routing
                return context.fireChannelRead(data)
            }
            reading = .taken(answer, route: route, since: .now)
        case (.taken(let answer, let route, let since), .end):
            reading = .answered
            write(answer, context: context)
            answered(route, answer.status, since)
        case (.taken, _), (.answered, _):
            break
        case (.routing, _), (.head, _):
            context.fireChannelRead(data)
        }
    }

    /// The answer as the HTTP/2 codec takes it; the headers every answer carries are added on its way out,
    /// and the body left off an answer to HEAD (`HTTP2AnswerHeaders`). Flushed in the connection's read, it
    /// leaves with the other streams' answers.
    private func write(_ answer: PreparedResponse, context: ChannelHandlerContext) {
        var response = HTTPResponse(status: answer.status, headerFields: answer.headers)
        response.headerFields[.contentLength] = String(answer.body?.readableBytes ?? 0)
        context.write(wrapOutboundOut(.head(response)), promise: nil)
        if let body = answer.body { context.write(wrapOutboundOut(.body(body)), promise: nil) }
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }
}
