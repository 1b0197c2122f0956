import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

// HTTPFloor MODE PORT FILE: answers every request on 127.0.0.1:PORT with FILE's bytes as one pre-built 200,
// the least SwiftNIO, the services' HTTP stack, can do per answer on this machine. The hot read's benchmark
// measures it beside nginx (bench/limits.py): how close the services come to nginx is bounded by it.
//
// MODE `parsed`: NIO's HTTP/1.1 parser (`HTTPRequestDecoder`, the one both services use), then one handler
// that writes the answer at each request's end: no router, no header of the request read, nothing counted.
// MODE `raw`: no parser at all; a request ends at each blank line (`\r\n\r\n`), which holds for the bodiless
// GETs the benchmark sends and for nothing else. No server should ever answer like this: it is a floor.

let arguments = CommandLine.arguments
guard arguments.count == 4, ["parsed", "raw"].contains(arguments[1]), let port = Int(arguments[2]),
    let body = FileManager.default.contents(atPath: arguments[3])
else {
    FileHandle.standardError.write(Data("usage: HTTPFloor parsed|raw PORT FILE\n".utf8))
    exit(2)
}
let parsed = arguments[1] == "parsed"

/// The answer, head and body in one buffer, with the headers nginx sends for a static file. Its `Date` is
/// the start's: a server refreshes it once a second, which costs nothing per answer.
let answer: ByteBuffer = {
    let date = DateFormatter()
    date.locale = Locale(identifier: "en_US_POSIX")
    date.timeZone = TimeZone(identifier: "GMT")
    date.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
    let head =
        "HTTP/1.1 200 OK\r\nServer: HTTPFloor\r\nDate: \(date.string(from: Date()))\r\nContent-Type: application/json\r\n"
        + "Content-Length: \(body.count)\r\nConnection: keep-alive\r\nETag: \"floor\"\r\n\r\n"
    var buffer = ByteBufferAllocator().buffer(capacity: head.utf8.count + body.count)
    buffer.writeString(head)
    buffer.writeBytes(body)
    return buffer
}()

/// Writes the answer at each request's end; flushes once per read, as NIO's own servers do.
final class ParsedAnswers: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = ByteBuffer

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .end = unwrapInboundIn(data) { context.write(wrapOutboundOut(answer), promise: nil) }
    }

    func channelReadComplete(context: ChannelHandlerContext) { context.flush() }
}

/// Writes the answer for each blank line read, which may straddle two reads.
final class RawAnswers: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer
    /// How much of `\r\n\r\n` the bytes read so far end with.
    private var matched = 0

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let bytes = unwrapInboundIn(data)
        var ends = 0
        bytes.withUnsafeReadableBytes { read in
            for byte in read {
                let expected: UInt8 = matched % 2 == 0 ? 13 : 10
                if byte == expected {
                    matched += 1
                    if matched == 4 {
                        ends += 1
                        matched = 0
                    }
                } else {
                    matched = byte == 13 ? 1 : 0
                }
            }
        }
        for _ in 0..<ends { context.write(wrapOutboundOut(answer), promise: nil) }
    }

    func channelReadComplete(context: ChannelHandlerContext) { context.flush() }
}

let group = MultiThreadedEventLoopGroup(numberOfThreads: System.coreCount)
let server = try ServerBootstrap(group: group)
    .serverChannelOption(.backlog, value: 256)
    .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
    .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
    .childChannelInitializer { channel in
        channel.eventLoop.makeCompletedFuture {
            let pipeline = channel.pipeline.syncOperations
            if parsed {
                try pipeline.addHandlers([ByteToMessageHandler(HTTPRequestDecoder()), ParsedAnswers()])
            } else {
                try pipeline.addHandler(RawAnswers())
            }
        }
    }
    .bind(host: "127.0.0.1", port: port).wait()
print("HTTPFloor (\(arguments[1])) listening on 127.0.0.1:\(port)")
try server.closeFuture.wait()
