import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// `GET /basemap/{z}/{x}/{y}.{ext}`: the tiles of the archive in `BASEMAP_TILES`, as a tile server answers
/// them (the archive's type and extension, cached a day, an ETag naming the bytes), so the web client's tile
/// layer needs no third party. A tile outside the archive's zooms or bounds, or one it does not hold, is 404.
struct BasemapTilesController: Sendable {
    let archive: PMTilesArchive
    /// The tiles' extension in their URLs: the archive's type's (the archive opens only with image tiles).
    let fileExtension: String

    init(archive: PMTilesArchive) {
        self.archive = archive
        fileExtension = archive.header.tileType.fileExtension ?? "png"
    }

    /// Tiles change only when the operator replaces the archive, and then their validators change too.
    static let cacheControl = "public, max-age=86400"

    /// The web client's tile layer, on this gateway (so the page's Content-Security-Policy stays `'self'`).
    var urlTemplate: String { "/basemap/{z}/{x}/{y}.\(fileExtension)" }

    func addRoutes(to router: Router<GatewayRequestContext>) {
        router.get("basemap/:z/:x/:tile") { request, context in
            try await respond(to: request, z: context.parameters.get("z"), x: context.parameters.get("x"), tile: context.parameters.get("tile"))
        }
    }

    func respond(to request: Request, z: String?, x: String?, tile: String?) async throws -> Response {
        guard let z = Self.number(z), let x = Self.number(x), let tile, let dot = tile.lastIndex(of: "."),
            let y = Self.number(String(tile[..<dot])), tile[tile.index(after: dot)...] == fileExtension,
            let location = try await archive.locate(z: z, x: x, y: y), location.length > 0
        else { return WebClientController.notFound(request) }
        var headers: HTTPFields = [.contentType: archive.header.tileType.contentType, .cacheControl: Self.cacheControl]
        headers[.eTag] = "\"\(archive.tag)-\(location.offset)-\(location.length)\""
        if let tags = request.headers[.ifNoneMatch],
            tags.split(separator: ",").contains(where: { $0.trimmingCharacters(in: .whitespaces) == headers[.eTag] })
        {
            return Response(status: .notModified, headers: headers)
        }
        if archive.header.tileCompression == .gzip { headers[.contentEncoding] = "gzip" }
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: try await archive.bytes(at: location)))
    }

    /// A zoom, column or row as a tile server writes it: plain decimal digits, not too many of them.
    static func number(_ text: String?) -> Int? {
        guard let text, (1...9).contains(text.utf8.count), text.utf8.allSatisfy({ (48...57).contains($0) }) else { return nil }
        return Int(text)
    }
}
