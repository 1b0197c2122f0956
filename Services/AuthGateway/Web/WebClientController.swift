import HTTPTypes
import Hummingbird
import NIOCore

/// `GET /` and `GET /web/…`: the browser client. Each file answers with its ETag (`If-None-Match` → 304),
/// gzip when the browser accepts it, and the page's security headers. Only the files read at start-up
/// have routes, so no request names anything else on disk.
struct WebClientController: Sendable {
    let files: WebClientFiles
    let securityHeaders: HTTPFields

    init(files: WebClientFiles, tiles: TileOrigin) {
        self.files = files
        securityHeaders = WebSecurityHeaders.fields(tiles: tiles)
    }

    func addRoutes(to router: Router<GatewayRequestContext>) {
        for (path, asset) in files.assets {
            router.get(RouterPath(path.isEmpty ? "/" : path)) { request, _ in respond(asset, to: request) }
        }
    }

    func respond(_ asset: WebAsset, to request: Request) -> Response {
        var headers = securityHeaders
        headers[.contentType] = asset.contentType
        // Browsers ask again each time and get 304 while nothing changed: the page stays small and current.
        headers[.cacheControl] = "no-cache"
        let gzip = asset.isCompressible && Self.acceptsGzip(request.headers[.acceptEncoding])
        if asset.isCompressible { headers[.vary] = "Accept-Encoding" }
        headers[.eTag] = gzip ? asset.gzipETag : asset.etag
        if asset.matches(ifNoneMatch: request.headers[.ifNoneMatch]) {
            return Response(status: .notModified, headers: headers)
        }
        if gzip { headers[.contentEncoding] = "gzip" }
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: gzip ? asset.gzipBody : asset.body))
    }

    /// `gzip` (or `*`) listed without `q=0`.
    static func acceptsGzip(_ header: String?) -> Bool {
        guard let header else { return false }
        return header.lowercased().split(separator: ",").contains { item in
            let parts = item.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
            guard let coding = parts.first, coding == "gzip" || coding == "x-gzip" || coding == "*" else { return false }
            let quality = parts.dropFirst().first { $0.hasPrefix("q=") }.flatMap { Double($0.dropFirst(2)) } ?? 1
            return quality > 0
        }
    }
}
