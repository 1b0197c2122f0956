import ContentCoding
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import TestSupport
import Testing

@testable import AuthGateway

/// The web client as the gateway serves it: the page at `/` and at a class map's and an invite's
/// addresses, its files, Leaflet, validators, compression and the page's security headers.
@Suite struct WebClientTests {
    static let tiles = "https://{s}.tiles.example.org/{z}/{x}/{y}.png"

    /// A Leaflet folder of our own, so the tests do not depend on the one installed.
    static func leafletFolder() throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("leaflet-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("images"), withIntermediateDirectories: true)
        try Data("window.L = {};\n".utf8).write(to: folder.appendingPathComponent("leaflet.js"))
        try Data(".leaflet-container { overflow: hidden; }\n".utf8).write(to: folder.appendingPathComponent("leaflet.css"))
        try Data([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).write(to: folder.appendingPathComponent("images/marker-icon.png"))
        return folder
    }

    static func withWebGateway(
        configure: @escaping @Sendable (inout GatewayConfiguration) -> Void = { _ in },
        _ body: @escaping @Sendable (any TestClientProtocol) async throws -> Void
    ) async throws {
        let leaflet = try leafletFolder()
        defer { try? FileManager.default.removeItem(at: leaflet) }
        try await withGateway(configure: {
            $0.tileURL = tiles
            $0.leafletDirectory = leaflet.path
            configure(&$0)
        }) { client, _ in try await body(client) }
    }

    /// Status, headers and the body's bytes as sent (a gzip body is not text).
    static func fetch(
        _ client: any TestClientProtocol, _ uri: String, headers: HTTPFields = [:]
    ) async throws -> (HTTPResponse.Status, HTTPFields, [UInt8]) {
        try await client.execute(uri: uri, method: .get, headers: headers, body: nil) { response in
            (response.status, response.headers, Array(response.body.readableBytesView))
        }
    }

    @Test func thePageAtRootCarriesAStrictContentSecurityPolicy() async throws {
        try await Self.withWebGateway { client in
            let reply = try await client.send(.get, "/")
            #expect(reply.status == .ok)
            #expect(reply.headers[.contentType] == "text/html; charset=utf-8")
            let policy = try #require(reply.headers[.contentSecurityPolicy])
            for directive in [
                "default-src 'self'", "script-src 'self'", "style-src 'self'", "frame-ancestors 'none'",
                "object-src 'none'", "img-src 'self' data: https://*.tiles.example.org",
            ] {
                #expect(policy.contains(directive), "\(directive) in \(policy)")
            }
            #expect(!policy.contains("unsafe"))
            #expect(reply.headers[HTTPField.Name("Referrer-Policy")!] == "strict-origin-when-cross-origin")
            #expect(reply.headers[HTTPField.Name("X-Content-Type-Options")!] == "nosniff")
            #expect(reply.body.contains(#"data-tile-url="https://{s}.tiles.example.org/{z}/{x}/{y}.png""#))
            #expect(reply.body.contains(#"data-identity-provider="local""#))
            #expect(reply.body.contains(#"data-sign-up-url="""#))
            #expect(!reply.body.contains("{{"), "every setting filled in")
        }
    }

    @Test func aClassMapsPageAndItsInvitePageAreThePageWithItsPolicy() async throws {
        try await Self.withWebGateway { client in
            let root = try await client.send(.get, "/")
            for path in [
                "/maps/ios-2027/", "/maps/ios-2027", "/maps/a1b/", "/maps/\(String(repeating: "x", count: 40))/",
                "/maps/ios-2027/join/Zm9vYmFyLWJhel9xdXV4MDE", "/maps/ios-2027/join/Zm9vYmFyLWJhel9xdXV4MDE/",
            ] {
                let reply = try await client.send(.get, path)
                #expect(reply.status == .ok, "\(path)")
                #expect(reply.headers[.contentType] == "text/html; charset=utf-8", "\(path)")
                #expect(reply.headers[.contentSecurityPolicy] == root.headers[.contentSecurityPolicy], "\(path)")
                #expect(reply.headers[.eTag] == root.headers[.eTag], "\(path): the same page, one validator")
                #expect(reply.body == root.body, "\(path)")
            }
        }
    }

    @Test func aPathWhoseSlugOrCodeIsSpelledOtherwiseIsNotAPage() async throws {
        try await Self.withWebGateway { client in
            let notSlugs = [
                "IOS-2027", "ios%2D2027", "ios%2d2027", "i%D0%BEs-2027", "ab", "a--b", "-abc", "abc-", "ios_2027", "ios.2027",
                String(repeating: "x", count: 41), "..", ".", "%2e%2e",
            ]
            let notCodes = ["bad%20code", "a.b", "\(String(repeating: "A", count: 65))", "abc%2Fdef", "%41%42%43"]
            let paths = notSlugs.flatMap { ["/maps/\($0)/", "/maps/\($0)/join/Zm9vYmFy"] } + notCodes.map { "/maps/ios-2027/join/\($0)" }
            // Raw, so nothing between the test and the gateway tidies the path.
            for path in paths {
                let connection = try RawConnection(port: client.port!)
                try connection.send("GET \(path) HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                let answer = try await connection.receiveResponse()
                #expect(answer.hasPrefix("HTTP/1.1 404"), "\(path): \(answer.prefix(80))")
                #expect(!answer.contains("<html"), "\(path)")
            }
        }
    }

    @Test func withTheUdacityProviderThePageLinksToItsSignUp() async throws {
        try await Self.withWebGateway(configure: {
            $0.identityProvider = .udacity
            $0.udacityBaseURL = "http://127.0.0.1:9"
        }) { client in
            let reply = try await client.send(.get, "/")
            #expect(reply.body.contains(#"data-identity-provider="udacity""#))
            #expect(reply.body.contains(#"data-sign-up-url="\#(WebClientFiles.udacitySignUpURL)""#))
        }
    }

    @Test func eachFileHasItsContentType() async throws {
        try await Self.withWebGateway { client in
            let expected = [
                ("/web/app.css", "text/css; charset=utf-8"), ("/web/js/main.js", "text/javascript; charset=utf-8"),
                ("/web/icon.svg", "image/svg+xml"), ("/web/leaflet/leaflet.js", "text/javascript; charset=utf-8"),
                ("/web/leaflet/leaflet.css", "text/css; charset=utf-8"), ("/web/leaflet/images/marker-icon.png", "image/png"),
            ]
            for (path, type) in expected {
                let reply = try await client.send(.get, path)
                #expect(reply.status == .ok, "\(path)")
                #expect(reply.headers[.contentType] == type, "\(path)")
                #expect(reply.headers[.contentSecurityPolicy] != nil, "\(path)")
            }
        }
    }

    @Test func aMatchingETagIs304WithNoBody() async throws {
        try await Self.withWebGateway { client in
            let first = try await client.send(.get, "/web/js/main.js")
            let etag = try #require(first.headers[.eTag])
            #expect(first.headers[.cacheControl] == "no-cache")
            let again = try await client.send(.get, "/web/js/main.js", headers: [HTTPField(name: .ifNoneMatch, value: etag)])
            #expect(again.status == .notModified)
            #expect(again.body.isEmpty)
            #expect(again.headers[.eTag] == etag)
            let listed = try await client.send(.get, "/web/js/main.js", headers: [HTTPField(name: .ifNoneMatch, value: #""other", \#(etag)"#)])
            #expect(listed.status == .notModified)
            let stale = try await client.send(.get, "/web/js/main.js", headers: [HTTPField(name: .ifNoneMatch, value: #""stale""#)])
            #expect(stale.status == .ok)
            #expect(stale.body == first.body)
            let page = try await client.send(.get, "/")
            #expect(page.headers[.eTag] != etag, "each file its own validator")
        }
    }

    @Test func textIsCodedAsTheBrowserAcceptsAndEachFormRevalidates() async throws {
        try await Self.withWebGateway { client in
            let (_, plainHeaders, plain) = try await Self.fetch(client, "/web/js/main.js")
            #expect(plainHeaders[.contentEncoding] == nil)
            #expect(plainHeaders[.vary] == "Accept-Encoding")
            let (status, headers, brotli) = try await Self.fetch(client, "/web/js/main.js", headers: [.acceptEncoding: "gzip, deflate, br"])
            #expect(status == .ok)
            #expect(headers[.contentEncoding] == "br")
            #expect(headers[.vary] == "Accept-Encoding")
            #expect(try Brotli.decompress(brotli, limit: 1 << 24) == plain)
            let (_, gzipHeaders, gzipped) = try await Self.fetch(client, "/web/js/main.js", headers: [.acceptEncoding: "gzip"])
            #expect(gzipHeaders[.contentEncoding] == "gzip")
            #expect(try await gunzipWithTheTool(gzipped) == plain)
            #expect(brotli.count < gzipped.count && gzipped.count < plain.count)
            let tags = [plainHeaders[.eTag], headers[.eTag], gzipHeaders[.eTag]]
            #expect(Set(tags).count == 3, "each form its own validator: \(tags)")
            // Each form's validator revalidates it, and the 304 names the form asked for.
            for (coding, tag) in [("identity", plainHeaders[.eTag]), ("br", headers[.eTag]), ("gzip", gzipHeaders[.eTag])] {
                let (revalidated, revalidatedHeaders, _) = try await Self.fetch(
                    client, "/web/js/main.js", headers: [.acceptEncoding: coding, .ifNoneMatch: tag ?? ""])
                #expect(revalidated == .notModified, "\(coding)")
                #expect(revalidatedHeaders[.eTag] == tag)
                #expect(revalidatedHeaders[.vary] == "Accept-Encoding")
            }
            let (_, refusedHeaders, refused) = try await Self.fetch(client, "/web/js/main.js", headers: [.acceptEncoding: "gzip;q=0, br;q=0"])
            #expect(refusedHeaders[.contentEncoding] == nil)
            #expect(refused == plain)
            let (_, imageHeaders, _) = try await Self.fetch(client, "/web/leaflet/images/marker-icon.png", headers: [.acceptEncoding: "gzip, br"])
            #expect(imageHeaders[.contentEncoding] == nil, "PNG is compressed already")
        }
    }

    @Test func unknownFilesAre404AndNoPathLeavesTheClientFolder() async throws {
        try await Self.withWebGateway { client in
            for path in ["/web/nope.js", "/web/js/", "/index.html", "/web/leaflet/leaflet.min.js", "/web/WebClientBundle.swift"] {
                let reply = try await client.send(.get, path)
                #expect(reply.status == .notFound, "\(path)")
            }
            // Raw, so nothing between the test and the gateway tidies the path.
            for path in [
                "/web/../../Package.swift", "/web/%2e%2e/%2e%2e/Package.swift", "/web/leaflet/..%2f..%2f..%2fetc%2fpasswd",
                "/web/js/..%2F..%2Findex.html", "//etc/passwd", "/web/./app.css/..",
            ] {
                let connection = try RawConnection(port: client.port!)
                try connection.send("GET \(path) HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                let answer = try await connection.receiveResponse()
                #expect(answer.hasPrefix("HTTP/1.1 404") || answer.hasPrefix("HTTP/1.1 400"), "\(path): \(answer.prefix(80))")
                #expect(!answer.contains("root:") && !answer.contains("PackageDescription"), "\(path)")
            }
        }
    }

    @Test func withoutLeafletThePageIsStillServed() async throws {
        try await Self.withWebGateway(configure: { $0.leafletDirectory = "/nonexistent/leaflet" }) { client in
            let page = try await client.send(.get, "/")
            #expect(page.status == .ok)
            let leaflet = try await client.send(.get, "/web/leaflet/leaflet.js")
            #expect(leaflet.status == .notFound)
        }
    }

    @Test func theTileOriginIsTheCSPSourceOfTileURL() {
        #expect(TileOrigin("https://tile.openstreetmap.org/{z}/{x}/{y}.png")?.source == "https://tile.openstreetmap.org")
        #expect(TileOrigin("https://{s}.tile.example.com/{z}/{x}/{y}.png")?.source == "https://*.tile.example.com")
        #expect(TileOrigin("http://127.0.0.1:8099/{z}/{x}/{y}.png")?.source == "http://127.0.0.1:8099")
        #expect(TileOrigin("ftp://tiles.example.com/{z}/{x}/{y}.png") == nil)
        #expect(TileOrigin("https://a.example.com; script-src *;/{z}/{x}/{y}") == nil)
        #expect(TileOrigin("https://user@tiles.example.com/{z}/{x}/{y}") == nil)
    }
}
