import HTTPTypes
import Hummingbird
import NIOCore
import OnTheMapShared
import PreparedHTTP
import ServiceKit

/// The session and users routes answer with `)]}'` and a newline before the JSON, successes and
/// errors alike. Clients strip exactly these 5 bytes.
enum SessionWire {
    static let prefix: StaticString = ")]}'\n"

    static func response(_ json: ByteBuffer, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:], prefixed: Bool = true) -> Response {
        guard prefixed else { return Response.json(json, status: status, headers: headers) }
        var body = ByteBuffer()
        body.reserveCapacity(prefix.utf8CodeUnitCount + json.readableBytes)
        body.writeStaticString(prefix)
        body.writeImmutableBuffer(json)
        return Response.json(body, status: status, headers: headers)
    }

    /// `"account":{"registered":true,"key":"…"}`: `registered` is what some clients take for success.
    static func writeAccount(_ account: Account, to json: inout JSONWriter) {
        json.key("account")
        json.beginObject()
        json.key("registered")
        json.bool(true)
        json.field("key", account.key)
        json.endObject()
    }

    /// `{"status":403,"error":"…"}`, with `parameter` between them when one is to blame.
    static func errorBody(_ error: GatewayError) -> ByteBuffer {
        var json = JSONWriter()
        json.beginObject()
        json.field("status", Int(error.status.code))
        if let parameter = error.parameter { json.field("parameter", parameter) }
        json.field("error", error.message)
        json.endObject()
        return json.buffer
    }
}

/// The StudentLocation routes answer errors in Parse's shape, `{"code":101,"error":"…"}`.
enum ParseWire {
    static func answer(for error: GatewayError) -> PreparedResponse {
        var headers = error.extraHeaders
        headers[.contentType] = "application/json"
        return PreparedResponse(status: error.status, headers: headers, body: ParseError(error.parseCode, error.message).json)
    }

    /// A refusal of a request answered before the router, counted among the refusals as the router's are.
    static func refusal(_ error: GatewayError, requestID: String) -> PreparedResponse {
        OperatorMetrics.refused(caseName(error))
        var answer = answer(for: error)
        answer.append(.requestID, legalValue: requestID)
        return answer
    }
}

/// A refusal as a small page of its own: its message, and the way back to the map.
enum PageWire {
    static func response(for error: GatewayError) -> Response {
        let message = HTMLEscaping.escaped(error.message)
        let page = """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8"><title>Sign-in failed · On The Map</title></head>
            <body><h1>Sign-in failed</h1><p id="reason">\(message)</p><p><a href="/">Back to On The Map</a></p></body></html>

            """
        var headers = error.extraHeaders
        headers[.contentType] = "text/html; charset=utf-8"
        headers[.cacheControl] = "no-store"
        headers[.contentSecurityPolicy] = "default-src 'none'"
        return Response(status: error.status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: page)))
    }
}

/// Which shape a route family's errors take.
enum ErrorStyle: Sendable {
    case session(prefixed: Bool)
    case parse
    /// A page for a person in a browser, where the gateway sent it (a sign-in's return).
    case page

    /// The shape of the answer to a request no route took (none for its path, or none for its method):
    /// Parse's under the roots of the Parse API's mounts (`/parse/…`, `/1/…`), where old Parse clients send
    /// everything and read every error as `{code, error}`, and under the class maps and their API (`/maps/…`,
    /// `/v1/maps/…`), whose every answer is in that shape; `{status, error}` elsewhere.
    static func unrouted(_ path: Substring) -> ErrorStyle {
        let underParse = (LocationsProxyController.parseRoots + MapsProxyController.roots).contains { path == $0 || path.hasPrefix($0 + "/") }
        return underParse ? .parse : .session(prefixed: false)
    }

    func response(for error: GatewayError) -> Response {
        switch self {
        case .session(let prefixed):
            SessionWire.response(SessionWire.errorBody(error), status: error.status, headers: error.extraHeaders, prefixed: prefixed)
        case .parse:
            ParseWire.answer(for: error).response
        case .page:
            PageWire.response(for: error)
        }
    }
}

/// Turns failures into the route family's error shape (`GatewayError.meaning(of:)` says which failure is which).
struct GatewayErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    let style: ErrorStyle

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as HTTPError where error.status == .notFound || error.status == .methodNotAllowed {
            throw error
        } catch {
            return response(for: GatewayError.meaning(of: error, logger: context.logger))
        }
    }

    func response(for error: GatewayError) -> Response {
        OperatorMetrics.refused(caseName(error))
        return style.response(for: error)
    }
}
