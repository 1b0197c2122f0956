import HTTPTypes
import NIOCore
import NIOHTTP1
import Tracing

/// A request as the answers before the router see it: the method, the target and the headers.
///
/// Its headers are read by field name (`header(_:)`), and handed on as `HTTPFields` (`headers`), the type
/// of the router's requests, an HTTP/2 stream's and the hop to locations-service. A request HTTP/1's
/// parser read keeps the parser's own list and is looked up in it: most requests here are answered from
/// memory after reading two or three headers, and turning every header into a field first would cost
/// more than the rest of such an answer.
public struct PreparedRequest: Sendable {
    public let method: HTTPMethod
    /// Path and query as sent, e.g. `/v1/StudentLocation?limit=100`.
    public let target: String
    /// The target up to its `?`, and what follows it (nil without a `?`).
    public let path: Substring
    public let query: Substring?
    /// The connection's peer: the client, or a proxy in front of it (nil when the door does not know it).
    public let peer: SocketAddress?
    private let parsed: ParsedHeaders

    /// `headers`: `Host` among them (an HTTP/2 request's `:authority`), as a trusted proxy's are.
    public init(method: HTTPMethod = .GET, target: String, headers: HTTPFields, peer: SocketAddress? = nil) {
        self.init(method: method, target: target, parsed: ParsedHeaders(headers), peer: peer)
    }

    /// A request's head as HTTP/1's parser hands it over.
    public init(_ head: HTTPRequestHead, peer: SocketAddress? = nil) {
        self.init(method: head.method, target: head.uri, parsed: ParsedHeaders(head.headers), peer: peer)
    }

    private init(method: HTTPMethod, target: String, parsed: ParsedHeaders, peer: SocketAddress?) {
        self.method = method
        self.target = target
        self.parsed = parsed
        self.peer = peer
        // By bytes, in place, not Characters: this runs for every request the door before the router sees.
        let bytes = target.utf8
        let offset: Int? =
            bytes.withContiguousStorageIfAvailable { $0.firstIndex(of: UInt8(ascii: "?")) }
            ?? bytes.firstIndex(of: UInt8(ascii: "?")).map { bytes.distance(from: bytes.startIndex, to: $0) }
        if let offset {
            let mark = bytes.index(bytes.startIndex, offsetBy: offset)
            path = target[..<mark]
            query = target[target.utf8.index(after: mark)...]
        } else {
            path = target[...]
            query = nil
        }
    }

    /// Every header, `Host` among them: for what is passed on (a write forwarded, a stream's client
    /// address), made from the parser's list when it is asked for.
    public var headers: HTTPFields { parsed.fields }

    /// The value of every line of `name`, joined as `HTTPFields` joins them (`; ` for cookies, `, ` for the
    /// rest); nil when there is none.
    public func header(_ name: HTTPField.Name) -> String? { parsed[name] }
}

extension HTTPFields {
    /// The header list HTTP/1's parser made (a request's or, at the gateway's hop, an answer's), `Host`
    /// among the rest: where NIO's own list becomes fields, once. A field whose name is not a token cannot
    /// be a field and is dropped, as the router's conversion drops it.
    ///
    /// The fields go in together (`init(_:)`, one `append(contentsOf:)`): `append` of one field is
    /// `RangeReplaceableCollection`'s, which reaches `HTTPFields` through a generic `replaceSubrange` for each field.
    public init(parsed headers: HTTPHeaders) {
        var fields: [HTTPField] = []
        fields.reserveCapacity(headers.count)
        for (name, value) in headers {
            if let name = HTTPField.Name(name) { fields.append(HTTPField(name: name, value: value)) }
        }
        self.init(fields)
    }
}

extension HTTPField.Name {
    /// HTTP/1's `Host`, which HTTP/2 and `HTTPRequest` carry as `:authority`: kept among a prepared request's fields.
    public static let host = HTTPField.Name("Host")!
}

/// How a request that skips the router is answered.
public enum PreparedHandling: Sendable {
    /// At once, from memory.
    case answer(PreparedResponse)
    /// Once its body has arrived, on the connection's event loop.
    case deferred(PreparedDeferral)
    /// With a stream that goes on while the connection is open; nothing else is read from the connection
    /// meanwhile.
    case stream(PreparedStreamOpening)
}

/// The answer to a request with a body, worked out on the connection's event loop. Equal only to itself
/// (and its copies): two deferrals with the same limit may answer differently.
public struct PreparedDeferral: Sendable, Equatable {
    /// The longest body passed on: a longer one is dropped as it arrives, and `respond` gets nil (and
    /// decides when to say so: after the checks that come first, say).
    public let bodyLimit: Int
    /// Called with the body, the connection's event loop, its peer (the client, or a proxy in front of it)
    /// and the request's trace (its span's context when it is traced, else `.topLevel`), which the work it
    /// does is traced under; it calls `answer` once, on that event loop, with the answer, whatever happens
    /// on the way (a failure is answered as the client is to be told it). A callback rather than a future:
    /// each future costs an allocation and a release of a generic object, and this is the busiest write's
    /// way out.
    public let respond: Respond
    private let identity = Identity()

    public typealias Respond =
        @Sendable (_ body: ByteBuffer?, _ eventLoop: any EventLoop, _ peer: SocketAddress?, _ trace: ServiceContext, _ answer: @escaping Answer) ->
        Void
    public typealias Answer = @Sendable (PreparedResponse) -> Void

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.identity === rhs.identity }

    public init(bodyLimit: Int, respond: @escaping Respond) {
        self.bodyLimit = bodyLimit
        self.respond = respond
    }
}

/// Decides, from a request's head alone, whether it skips the router, and names its route (as the router
/// names it, for the metrics); nil sends it on to the router. Runs on a connection's event loop, so it must
/// not block. `RouteTable.answer` is the one the services use.
public typealias PreparedAnswer = @Sendable (PreparedRequest) -> (handling: PreparedHandling, route: String)?

/// What tells apart values that hold closures, which cannot be compared: each made is equal to itself alone.
final class Identity: Sendable {}
