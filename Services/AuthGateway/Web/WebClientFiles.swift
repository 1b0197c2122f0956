import Foundation
import Logging
import OnTheMapShared
import WebClient

/// The web client's files by URL path, read once at start-up: the page at `/`, its own files under `/web/`,
/// and Leaflet's under `/web/leaflet/` from `LEAFLET_DIR`.
struct WebClientFiles: Sendable {
    let assets: [String: WebAsset]

    static let prefix = "web"
    /// The world map's cells (scripts/make-basemap.py), which browsers keep longer than the rest.
    static let basemapFolder = "basemap/"
    /// Where the udacity provider's students make an account, as the apps' Sign Up link did.
    static let udacitySignUpURL = "https://auth.udacity.com/sign-up"

    /// What the page learns from the gateway's settings, written into `index.html`'s `<body>` at start-up.
    struct PageSettings: Sendable {
        /// The tile layer's URL template, or `none` for the built-in world map alone.
        var tileURL: String
        /// The deepest zoom the tiles have, when the gateway knows it (its own archive's); deeper zooms enlarge them.
        var tileMaxZoom: Int?
        var identityProvider: String
        /// Where the identity provider signs people up, when that is not this gateway.
        var signUpURL: String?
        /// The OpenID Connect provider's name, when students can sign in with it.
        var signInProvider: String?
    }

    static func load(clientDirectory: URL?, leafletDirectory: String, page: PageSettings, logger: Logger) throws -> WebClientFiles {
        guard let clientDirectory else { throw CocoaError(.fileNoSuchFile) }
        var assets: [String: WebAsset] = [:]
        for (relative, url) in try files(under: clientDirectory) {
            guard let type = WebAsset.contentType(forExtension: url.pathExtension) else { continue }
            var bytes = Array(try Data(contentsOf: url))
            if relative == "index.html" {
                bytes = Array(fillIn(String(decoding: bytes, as: UTF8.self), page: page).utf8)
                assets[""] = WebAsset(bytes: bytes, contentType: type)
            } else {
                let cacheControl = relative.hasPrefix(basemapFolder) ? WebAsset.keptAWeek : WebAsset.revalidated
                assets["\(prefix)/\(relative)"] = WebAsset(bytes: bytes, contentType: type, cacheControl: cacheControl)
            }
        }
        guard assets[""] != nil else { throw CocoaError(.fileNoSuchFile) }
        let leaflet = leafletFiles(in: URL(fileURLWithPath: leafletDirectory))
        if let leaflet {
            for (path, asset) in leaflet { assets["\(prefix)/leaflet/\(path)"] = asset }
        } else {
            logger.warning(
                "Leaflet not found in \(leafletDirectory) (install libjs-leaflet or set LEAFLET_DIR): the web client shows the list but no map")
        }
        return WebClientFiles(assets: assets)
    }

    /// `leaflet.js` (the minified build when there is one), `leaflet.css` and `images/`; nil without the first two.
    static func leafletFiles(in directory: URL) -> [String: WebAsset]? {
        let manager = FileManager.default
        let script = ["leaflet.min.js", "leaflet.js"].map { directory.appendingPathComponent($0) }
            .first { manager.fileExists(atPath: $0.path) }
        guard let script, let scriptBytes = try? Data(contentsOf: script),
            let styleBytes = try? Data(contentsOf: directory.appendingPathComponent("leaflet.css"))
        else { return nil }
        var assets = [
            "leaflet.js": WebAsset(bytes: Array(scriptBytes), contentType: "text/javascript; charset=utf-8"),
            "leaflet.css": WebAsset(bytes: Array(styleBytes), contentType: "text/css; charset=utf-8"),
        ]
        let images = directory.appendingPathComponent("images")
        for name in (try? manager.contentsOfDirectory(atPath: images.path)) ?? [] where name.hasSuffix(".png") && isPlainName(name) {
            if let bytes = try? Data(contentsOf: images.appendingPathComponent(name)) {
                assets["images/\(name)"] = WebAsset(bytes: Array(bytes), contentType: "image/png")
            }
        }
        return assets
    }

    /// Every regular file below `directory`, by its path relative to it. Names that are not plain (a
    /// router pattern character, a dot first) are left out, so each path is a literal route.
    static func files(under directory: URL) throws -> [(String, URL)] {
        let base = directory.resolvingSymlinksInPath().standardizedFileURL
        let basePath = base.path.hasSuffix("/") ? base.path : base.path + "/"
        var found: [(String, URL)] = []
        let enumerator = FileManager.default.enumerator(at: base, includingPropertiesForKeys: [.isRegularFileKey])
        while let url = enumerator?.nextObject() as? URL {
            guard (try? url.resourceValues(forKeys: [.isRegularFileKey]))?.isRegularFile == true else { continue }
            let path = url.resolvingSymlinksInPath().standardizedFileURL.path
            guard path.hasPrefix(basePath) else { continue }
            let relative = String(path.dropFirst(basePath.count))
            guard relative.split(separator: "/").allSatisfy({ isPlainName(String($0)) }) else { continue }
            found.append((relative, url))
        }
        return found
    }

    static func isPlainName(_ name: String) -> Bool {
        guard let first = name.first, first != "." else { return false }
        return name.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "._-".contains($0)) }
    }

    /// `{{TILE_URL}}`, `{{TILE_MAX_ZOOM}}`, `{{IDENTITY_PROVIDER}}`, `{{SIGN_UP_URL}}` and `{{SIGN_IN_PROVIDER}}` in the
    /// page, as HTML attribute text.
    static func fillIn(_ page: String, page settings: PageSettings) -> String {
        page.replacingOccurrences(of: "{{TILE_URL}}", with: HTMLEscaping.escaped(settings.tileURL))
            .replacingOccurrences(of: "{{TILE_MAX_ZOOM}}", with: settings.tileMaxZoom.map(String.init) ?? "")
            .replacingOccurrences(of: "{{IDENTITY_PROVIDER}}", with: HTMLEscaping.escaped(settings.identityProvider))
            .replacingOccurrences(of: "{{SIGN_UP_URL}}", with: HTMLEscaping.escaped(settings.signUpURL ?? ""))
            .replacingOccurrences(of: "{{SIGN_IN_PROVIDER}}", with: HTMLEscaping.escaped(settings.signInProvider ?? ""))
    }
}
