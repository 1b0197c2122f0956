import ContentCoding
import Crypto
import Foundation
import NIOCore
import NIOPosix
import ServiceKit
import Synchronization

/// A PMTiles archive on disk (`BASEMAP_TILES`), read by position: its header and root directory once at
/// start-up, a leaf directory when a tile needs it (the last few decoded ones kept), a tile's bytes on each
/// request. Nothing is read whole, so an archive of the whole planet costs the gateway its small cache of
/// directories, not its size. Reads run on NIO's thread pool, never on an event loop.
final class PMTilesArchive: Sendable {
    /// Where a tile's bytes are in the file.
    struct Location: Sendable, Equatable {
        var offset: UInt64
        var length: UInt64
    }

    let header: PMTiles.Header
    /// Sets this archive's validators apart from another's: a digest of the header, which locates everything.
    let tag: String
    private let file: ArchiveFile
    private let root: [PMTiles.Entry]
    private let leaves = Mutex(LeafCache())

    /// Leaf directories kept decoded; each holds at most a few thousand entries of 32 bytes.
    static let cachedLeaves = 64
    /// The most a directory may take compressed and decoded, and a tile: an archive's lengths are not trusted
    /// with memory.
    static let directoryLimit = 8 << 20
    static let tileLimit = 8 << 20

    /// Opens the archive and reads its header and root directory, or says in one line why it cannot serve it.
    init(path: String) throws(PMTiles.Failure) {
        let file = try ArchiveFile(path: path)
        let headerBytes = try file.read(offset: 0, count: PMTiles.Header.size)
        let header = try PMTiles.Header(headerBytes)
        guard header.tileType.fileExtension != nil else {
            throw PMTiles.Failure(
                reason: "its tiles are not images (tile type \(header.tileType.rawValue)); the web client draws png, jpg, webp or avif")
        }
        guard [PMTiles.Compression.none, .gzip, .unknown].contains(header.internalCompression) else {
            throw PMTiles.Failure(reason: "its directories are compressed with \(header.internalCompression); the gateway reads gzip or none")
        }
        self.file = file
        self.header = header
        tag = SHA256.hash(data: headerBytes).prefix(8).hexString
        root = try Self.directory(file.read(offset: header.rootOffset, count: Int(min(header.rootLength, UInt64(Self.directoryLimit)))), header)
    }

    /// Where the tile is, or nil when the archive has no such tile; reads a leaf directory or two at most.
    func locate(z: Int, x: Int, y: Int) async throws -> Location? {
        guard header.covers(z: z, x: x, y: y) else { return nil }
        let id = PMTiles.tileID(z: z, x: x, y: y)
        var entries = root
        // The specification allows leaves under leaves; three levels reach far past any real archive.
        for _ in 0..<4 {
            guard let entry = PMTiles.find(id, in: entries) else { return nil }
            if entry.runLength > 0 {
                return Location(offset: header.tileDataOffset &+ entry.offset, length: entry.length)
            }
            entries = try await leaf(Location(offset: header.leafDirectoriesOffset &+ entry.offset, length: entry.length))
        }
        return nil
    }

    func bytes(at location: Location) async throws -> ByteBuffer {
        guard location.length <= UInt64(Self.tileLimit) else { throw PMTiles.Failure(reason: "a tile of \(location.length) bytes") }
        let file = file
        return ByteBuffer(
            bytes: try await NIOThreadPool.singleton.runIfActive { try file.read(offset: location.offset, count: Int(location.length)) })
    }

    private func leaf(_ location: Location) async throws -> [PMTiles.Entry] {
        if let cached = leaves.withLock({ $0.entries(at: location) }) { return cached }
        guard location.length <= UInt64(Self.directoryLimit) else { throw PMTiles.Failure(reason: "a directory of \(location.length) bytes") }
        let (file, header) = (file, header)
        let entries = try await NIOThreadPool.singleton.runIfActive {
            try Self.directory(file.read(offset: location.offset, count: Int(location.length)), header)
        }
        leaves.withLock { $0.keep(entries, at: location) }
        return entries
    }

    private static func directory(_ bytes: [UInt8], _ header: PMTiles.Header) throws(PMTiles.Failure) -> [PMTiles.Entry] {
        guard header.internalCompression == .gzip else { return try PMTiles.directory(bytes) }
        let inflated: [UInt8]
        do {
            inflated = try Gzip.decompress(bytes, limit: directoryLimit)
        } catch {
            throw PMTiles.Failure(reason: "a directory does not inflate: \(error == .tooLarge ? "larger than the limit" : "not whole gzip")")
        }
        return try PMTiles.directory(inflated)
    }

    /// The last leaf directories read, the oldest dropped first.
    private struct LeafCache {
        var byLocation: [Location: [PMTiles.Entry]] = [:]
        var order: [Location] = []

        func entries(at location: Location) -> [PMTiles.Entry]? { byLocation[location] }

        mutating func keep(_ entries: [PMTiles.Entry], at location: Location) {
            guard byLocation.updateValue(entries, forKey: location) == nil else { return }
            order.append(location)
            if order.count > PMTilesArchive.cachedLeaves { byLocation[order.removeFirst()] = nil }
        }
    }
}

extension PMTilesArchive.Location: Hashable {}

/// The archive's file, open for the gateway's life and read with `pread`, which takes its position with
/// each call and so serves concurrent requests without a shared file offset.
private final class ArchiveFile: Sendable {
    let descriptor: Int32

    init(path: String) throws(PMTiles.Failure) {
        descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw PMTiles.Failure(reason: "cannot open \(path): \(String(cString: strerror(errno)))") }
    }

    deinit { close(descriptor) }

    func read(offset: UInt64, count: Int) throws(PMTiles.Failure) -> [UInt8] {
        guard count > 0 else { return [] }
        guard offset <= UInt64(Int64.max) else { throw PMTiles.Failure(reason: "an offset past any file") }
        var bytes = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let read = bytes.withUnsafeMutableBytes { buffer in
                pread(descriptor, buffer.baseAddress! + done, count - done, off_t(offset) + off_t(done))
            }
            if read < 0, errno == EINTR { continue }
            guard read > 0 else {
                throw PMTiles.Failure(reason: read == 0 ? "the file ends before a part it names" : String(cString: strerror(errno)))
            }
            done += read
        }
        return bytes
    }
}
