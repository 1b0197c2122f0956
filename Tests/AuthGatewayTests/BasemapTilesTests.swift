import ContentCoding
import Foundation
import HTTPTypes
import ServiceKit
import TestSupport
import Testing

@testable import AuthGateway

/// `BASEMAP_TILES`: the gateway reads a PMTiles archive written by the format's own Python writer
/// (scripts/make-test-pmtiles.py) and serves its tiles as a tile server would, reading only what it needs.
@Suite struct BasemapTilesTests {
    /// The archive's tiles to z`maxZoom`, each "z/x/y;" repeated to `bytes` and a little more (the script's rule),
    /// written by a script waited for on a thread of its own (`blocking`).
    static func archive(maxZoom: Int, bytes: Int, tiles: Int? = nil) async throws -> URL {
        try await blocking { try write(maxZoom: maxZoom, bytes: bytes, tiles: tiles) }
    }

    private static func write(maxZoom: Int, bytes: Int, tiles: Int?) throws -> URL {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("tiles-\(UUID().uuidString).pmtiles")
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("scripts/make-test-pmtiles.py")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments =
            ["python3", script.path, file.path, "--max-zoom", "\(maxZoom)", "--bytes", "\(bytes)"] + (tiles.map { ["--tiles", "\($0)"] } ?? [])
        let errors = Pipe()
        process.standardError = errors
        try process.run()
        let message = String(decoding: errors.readUntilEnd(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw ArchiveError(description: "make-test-pmtiles.py failed (pip install pmtiles): \(message)")
        }
        return file
    }

    struct ArchiveError: Error, CustomStringConvertible { let description: String }

    static func patterned(z: Int, x: Int, y: Int, bytes: Int) -> [UInt8] {
        let unit = Array("\(z)/\(x)/\(y);".utf8)
        let length = bytes + (x * 7 + y * 13) % 1024
        return (0..<length).map { unit[$0 % unit.count] }
    }

    @Test func tileIDsCountTheLowerZoomsThenFollowTheHilbertCurve() {
        // The values PyPI's pmtiles gives (pmtiles.tile.zxy_to_tileid).
        let expected: [(Int, Int, Int, UInt64)] = [
            (0, 0, 0, 0), (1, 0, 0, 1), (1, 0, 1, 2), (1, 1, 1, 3), (1, 1, 0, 4), (2, 0, 0, 5), (2, 3, 3, 15), (3, 5, 2, 76),
            (12, 3456, 1234, 18_771_707), (20, 123_456, 654_321, 652_812_043_350),
        ]
        for (z, x, y, id) in expected { #expect(PMTiles.tileID(z: z, x: x, y: y) == id, "\(z)/\(x)/\(y)") }
    }

    /// A directory PyPI's pmtiles serialized: four entries, a run of three, a leaf, a far tile id.
    static let written: [UInt8] = [
        31, 139, 8, 0, 0, 0, 0, 0, 2, 3, 99, 97, 96, 92, 205, 116, 100, 1, 11, 35, 51, 3, 99, 138, 145, 8, 59, 35, 3, 195, 75, 118,
        0, 247, 114, 4, 6, 21, 0, 0, 0,
    ]
    static let entries = [
        PMTiles.Entry(tileID: 0, offset: 0, length: 100, runLength: 1), PMTiles.Entry(tileID: 1, offset: 100, length: 50, runLength: 3),
        PMTiles.Entry(tileID: 300, offset: 150, length: 20, runLength: 0), PMTiles.Entry(tileID: 70_000, offset: 1000, length: 7, runLength: 1),
    ]

    @Test func aDirectoryInflatesAndDecodesItsVarintColumns() throws {
        let inflated = try Gzip.decompress(Self.written, limit: 1 << 20)
        #expect(inflated == [4, 0, 1, 171, 2, 196, 160, 4, 1, 3, 0, 1, 100, 50, 20, 7, 1, 0, 0, 233, 7])
        #expect(try PMTiles.directory(inflated) == Self.entries)
    }

    @Test func aTileIsFoundInItsRunOrSentToItsLeaf() {
        #expect(PMTiles.find(0, in: Self.entries) == Self.entries[0])
        #expect(PMTiles.find(3, in: Self.entries) == Self.entries[1])
        #expect(PMTiles.find(4, in: Self.entries) == nil)
        #expect(PMTiles.find(5_000, in: Self.entries) == Self.entries[2])
        #expect(PMTiles.find(70_000, in: Self.entries) == Self.entries[3])
        #expect(PMTiles.find(70_001, in: Self.entries) == nil)
    }

    @Test(Needs.pmtiles) func theArchiveGivesEachTileItsBytesAndNothingOutsideItsZoomsOrGrid() async throws {
        let file = try await Self.archive(maxZoom: 3, bytes: 100)
        defer { try? FileManager.default.removeItem(at: file) }
        let archive = try PMTilesArchive(path: file.path)
        #expect(archive.header.tileType == .png && archive.header.minZoom == 0 && archive.header.maxZoom == 3)
        for z in 0...3 {
            for x in 0..<(1 << z) {
                for y in 0..<(1 << z) {
                    let location = try #require(try await archive.locate(z: z, x: x, y: y))
                    #expect(Array((try await archive.bytes(at: location)).readableBytesView) == Self.patterned(z: z, x: x, y: y, bytes: 100))
                }
            }
        }
        #expect(try await archive.locate(z: 4, x: 0, y: 0) == nil)
        #expect(try await archive.locate(z: 2, x: 4, y: 0) == nil)
        #expect(try await archive.locate(z: 2, x: 0, y: -1) == nil)
    }

    @Test func aFileThatIsNoArchiveIsRefusedWithItsReason() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("tiles-\(UUID().uuidString).pmtiles")
        try Data(repeating: 7, count: 200).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        #expect(throws: PMTiles.Failure(reason: "not a PMTiles archive")) { try PMTilesArchive(path: file.path) }
        #expect(throws: PMTiles.Failure.self) { try PMTilesArchive(path: file.path + ".missing") }
    }

    @Test func settingsNameOneSourceOfTiles() throws {
        let base = [
            "DATABASE_URL": "postgres://u@127.0.0.1/d", "LOCATIONS_URL": "http://127.0.0.1:8081", "INTERNAL_TOKEN": String(repeating: "t", count: 32),
        ]
        #expect(try GatewayConfiguration.fromEnvironment(base.merging(["TILE_URL": "None"]) { $1 }).tileURL == "none")
        #expect(throws: ConfigurationError.self) {
            try GatewayConfiguration.fromEnvironment(base.merging(["TILE_URL": "none", "BASEMAP_TILES": "/tmp/x.pmtiles"]) { $1 })
        }
        #expect(throws: ConfigurationError.self) {
            try GatewayConfiguration.fromEnvironment(base.merging(["BASEMAP_TILES": "/nonexistent.pmtiles"]) { $1 })
        }
    }

    @Test func withNoTileServerThePolicyNamesNoOtherOrigin() {
        #expect(WebSecurityHeaders.contentSecurityPolicy(tiles: nil).contains("img-src 'self' data:;"))
    }

    @Test(Needs.pmtiles) func theGatewayAnswersATileWithTheArchivesBytesAnd404Outside() async throws {
        let file = try await Self.archive(maxZoom: 2, bytes: 300)
        defer { try? FileManager.default.removeItem(at: file) }
        let archive = try PMTilesArchive(path: file.path)
        try await WebClientTests.withWebGateway(configure: { $0.basemapTiles = archive }) { client in
            let (status, headers, body) = try await WebClientTests.fetch(client, "/basemap/2/1/3.png")
            #expect(status == .ok)
            #expect(body == Self.patterned(z: 2, x: 1, y: 3, bytes: 300))
            #expect(headers[.contentType] == "image/png")
            #expect(headers[.cacheControl] == BasemapTilesController.cacheControl)
            let etag = try #require(headers[.eTag])
            let (revalidated, _, nothing) = try await WebClientTests.fetch(client, "/basemap/2/1/3.png", headers: [.ifNoneMatch: etag])
            #expect(revalidated == .notModified && nothing.isEmpty)
            for outside in ["/basemap/3/0/0.png", "/basemap/2/4/0.png", "/basemap/2/1/3.jpg", "/basemap/2/1/three.png", "/basemap/02x/1/3.png"] {
                #expect(try await WebClientTests.fetch(client, outside).0 == .notFound, "\(outside)")
            }
            let (_, pageHeaders, page) = try await WebClientTests.fetch(client, "/")
            let html = String(decoding: page, as: UTF8.self)
            #expect(html.contains(#"data-tile-url="/basemap/{z}/{x}/{y}.png" data-tile-max-zoom="2""#))
            #expect(pageHeaders[.contentSecurityPolicy]?.contains("img-src 'self' data:;") == true)
        }
    }

    @Test func withTileURLNoneThePageHasNoTileServerAndItsPolicyNoOtherOrigin() async throws {
        try await WebClientTests.withWebGateway(configure: { $0.tileURL = GatewayConfiguration.noTiles }) { client in
            let (_, headers, page) = try await WebClientTests.fetch(client, "/")
            #expect(String(decoding: page, as: UTF8.self).contains(#"data-tile-url="none""#))
            #expect(headers[.contentSecurityPolicy]?.contains("img-src 'self' data:;") == true)
        }
    }

    @Test func theWorldMapsCellsAreKeptAWeekAndSentCompressed() async throws {
        try await WebClientTests.withWebGateway { client in
            let (status, headers, body) = try await WebClientTests.fetch(client, "/web/basemap/0/0-0.json", headers: [.acceptEncoding: "gzip"])
            #expect(status == .ok)
            #expect(headers[.cacheControl] == WebAsset.keptAWeek)
            #expect(headers[.contentEncoding] == "gzip")
            let world = try JSONSerialization.jsonObject(with: Data(try await gunzipWithTheTool(body))) as? [String: Any]
            let kinds = Set((world?["features"] as? [[String: Any]] ?? []).compactMap { ($0["properties"] as? [String: Any])?["kind"] as? String })
            #expect(kinds == ["land", "lake", "border", "label"])
            #expect(try await WebClientTests.fetch(client, "/web/app.css").1[.cacheControl] == "no-cache")
        }
    }

    /// A 50 MB archive with leaf directories, every tile read: the gateway's memory grows by its small cache
    /// of directories, not by what it read.
    @Test(Needs.pmtiles) func servingALargeArchiveKeepsMemoryFlat() async throws {
        let file = try await Self.archive(maxZoom: 9, bytes: 2048, tiles: 20_000)
        defer { try? FileManager.default.removeItem(at: file) }
        let size = try FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int ?? 0
        #expect(size > 45_000_000)
        let archive = try PMTilesArchive(path: file.path)
        var tiles: [(Int, Int, Int)] = []
        for z in 0...9 { for x in 0..<(1 << z) { for y in 0..<(1 << z) { tiles.append((z, x, y)) } } }
        tiles.sort { PMTiles.tileID(z: $0.0, x: $0.1, y: $0.2) < PMTiles.tileID(z: $1.0, x: $1.1, y: $1.2) }
        tiles = Array(tiles.prefix(20_000))
        func read(_ range: Range<Int>) async throws {
            for (z, x, y) in tiles[range] {
                let location = try #require(try await archive.locate(z: z, x: x, y: y))
                let bytes = try await archive.bytes(at: location)
                #expect(bytes.readableBytes == 2048 + (x * 7 + y * 13) % 1024)
            }
        }
        try await read(0..<500)
        let before = try Self.residentBytes()
        try await read(500..<20_000)
        let growth = try Self.residentBytes() - before
        #expect(growth < 16_000_000, "resident memory grew by \(growth) bytes reading \(size) bytes of tiles")
    }

    static func residentBytes() throws -> Int {
        let statm = try String(contentsOfFile: "/proc/self/statm", encoding: .utf8).split(separator: " ")
        return Int(statm[1])! * Int(sysconf(Int32(_SC_PAGESIZE)))
    }
}
