import ContentCoding
import HTTPTypes
import Hummingbird
import NIOCore
import OnTheMapShared
import ServiceKit

/// `GET /` and `GET /web/…`: the browser client. Each file answers with its ETag (`If-None-Match` → 304),
/// brotli or gzip as the browser accepts, and the page's security headers. Only the files read at start-up
/// have routes, so no request names anything else on disk. A class map's page (`/maps/{slug}/`) and an
/// invite's (`/maps/{slug}/join/{code}`) are the same page, which reads its map and the code from its own
/// address; a path whose slug or code is not one spelled exactly as they are written is not a page (404).
struct WebClientController: Sendable {
    let files: WebClientFiles
    let securityHeaders: HTTPFields

    init(files: WebClientFiles, tiles: TileOrigin?) {
        self.files = files
        securityHeaders = WebSecurityHeaders.fields(tiles: tiles)
    }

    func addRoutes(to router: Router<GatewayRequestContext>) {
        for (path, asset) in files.assets {
            router.get(RouterPath(path.isEmpty ? "/" : path)) { request, _ in respond(asset, to: request) }
        }
        guard let page = files.assets[""] else { return }
        router.get("maps/:slug") { request, context in
            Self.isMapPage(context.parameters) ? respond(page, to: request) : Self.notFound(request)
        }
        router.get("maps/:slug/join/:code") { request, context in
            let isPage = Self.isMapPage(context.parameters) && Self.isInviteCode(context.parameters.get("code"))
            return isPage ? respond(page, to: request) : Self.notFound(request)
        }
    }

    /// The slug as the router read it from the raw path: a percent-encoded or folded spelling is no slug.
    static func isMapPage(_ parameters: Parameters) -> Bool {
        parameters.get("slug").flatMap { MapSlug($0) } != nil
    }

    /// An invite's code as the gateway makes them: base64url, no padding. Anything else is no invite page;
    /// a well-formed code that names no invite is the page's to explain.
    static func isInviteCode(_ code: String?) -> Bool {
        guard let code, (1...64).contains(code.utf8.count) else { return false }
        return code.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                true
            case UInt8(ascii: "-"), UInt8(ascii: "_"): true
            default: false
            }
        }
    }

    /// The answer of a path no route takes: the map's page is not there.
    static func notFound(_ request: Request) -> Response {
        ErrorStyle.unrouted(Substring(request.uri.path)).response(for: .noRoute(method: request.method.rawValue, path: request.uri.path))
    }

    func respond(_ asset: WebAsset, to request: Request) -> Response {
        var headers = securityHeaders
        headers[.contentType] = asset.contentType
        headers[.cacheControl] = asset.cacheControl
        let (body, coding) = asset.body(request.acceptedCoding)
        if asset.isCompressible { headers[.vary] = "Accept-Encoding" }
        headers[.eTag] = EntityTags.coded(asset.etag, coding)
        if let ifNoneMatch = request.headers[.ifNoneMatch], EntityTags.ifNoneMatch(ifNoneMatch, namesAnyFormOf: asset.etag) {
            return Response(status: .notModified, headers: headers)
        }
        if let value = coding.headerValue { headers[.contentEncoding] = value }
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: body))
    }
}
