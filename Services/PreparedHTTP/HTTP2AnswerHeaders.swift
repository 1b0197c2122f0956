import HTTPTypes
import NIOCore
import NIOHTTPTypes

/// On each HTTP/2 stream: the headers `AnswerHeaders` adds to every answer, and an answer to HEAD without its
/// body (the head a GET would have, RFC 9110 §9.3.2): HTTP/2 refuses DATA on a HEAD's stream, and the router
/// writes the body of what it answers whatever the method.
public final class HTTP2AnswerHeaders: ChannelDuplexHandler, RemovableChannelHandler {
    public typealias InboundIn = HTTPRequestPart
    public typealias InboundOut = HTTPRequestPart
    public typealias OutboundIn = HTTPResponsePart
    public typealias OutboundOut = HTTPResponsePart

    private let headers: AnswerHeaders
    private var headOnly = false

    /// The headers of a server named `serverName`, over TLS.
    public init(serverName: String) { headers = AnswerHeaders(serverName: serverName, secure: true) }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head(let request) = unwrapInboundIn(data) { headOnly = request.method == .head }
        context.fireChannelRead(data)
    }

    public func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(var response) where response.status.code >= 200:
            headers.stamp(&response)
            context.write(wrapOutboundOut(.head(response)), promise: promise)
        case .body where headOnly:
            promise?.succeed()
        default:
            context.write(data, promise: promise)
        }
    }
}
