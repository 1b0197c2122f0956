import Foundation

/// The parts of a PMTiles archive (version 3) that finding a tile needs: the 127-byte header, the directories
/// (a root directory, leaf directories below it) and the tile ids they are sorted by. Values only: reading
/// the file is `PMTilesArchive`'s.
enum PMTiles {
    struct Failure: Error, Equatable {
        let reason: String
    }

    /// The header's codes for how the directories and the tiles are compressed.
    enum Compression: UInt8, Sendable {
        case unknown = 0
        case none = 1
        case gzip = 2
        case brotli = 3
        case zstd = 4
    }

    /// What the tiles are, with the extension and the Content-Type a tile server gives them.
    enum TileType: UInt8, Sendable {
        case unknown = 0
        case vector = 1
        case png = 2
        case jpeg = 3
        case webp = 4
        case avif = 5

        var fileExtension: String? {
            switch self {
            case .png: "png"
            case .jpeg: "jpg"
            case .webp: "webp"
            case .avif: "avif"
            case .unknown, .vector: nil
            }
        }

        var contentType: String {
            switch self {
            case .png: "image/png"
            case .jpeg: "image/jpeg"
            case .webp: "image/webp"
            case .avif: "image/avif"
            case .vector: "application/vnd.mapbox-vector-tile"
            case .unknown: "application/octet-stream"
            }
        }
    }

    struct Header: Sendable {
        static let size = 127

        var rootOffset: UInt64
        var rootLength: UInt64
        var leafDirectoriesOffset: UInt64
        var leafDirectoriesLength: UInt64
        var tileDataOffset: UInt64
        var tileDataLength: UInt64
        var internalCompression: Compression
        var tileCompression: Compression
        var tileType: TileType
        var minZoom: Int
        var maxZoom: Int
        /// The bounds, in degrees: west, south, east, north.
        var bounds: (west: Double, south: Double, east: Double, north: Double)

        init(_ bytes: [UInt8]) throws(Failure) {
            guard bytes.count >= Self.size, bytes.starts(with: Array("PMTiles".utf8)) else { throw Failure(reason: "not a PMTiles archive") }
            guard bytes[7] == 3 else { throw Failure(reason: "PMTiles version \(bytes[7]), not 3") }
            func integer(_ at: Int) -> UInt64 { (0..<8).reduce(0) { $0 | UInt64(bytes[at + $1]) << UInt64(8 * $1) } }
            func degrees(_ at: Int) -> Double {
                Double(Int32(bitPattern: (0..<4).reduce(UInt32(0)) { $0 | UInt32(bytes[at + $1]) << UInt32(8 * $1) })) / 10_000_000
            }
            rootOffset = integer(8)
            rootLength = integer(16)
            leafDirectoriesOffset = integer(40)
            leafDirectoriesLength = integer(48)
            tileDataOffset = integer(56)
            tileDataLength = integer(64)
            internalCompression = Compression(rawValue: bytes[97]) ?? .unknown
            tileCompression = Compression(rawValue: bytes[98]) ?? .unknown
            tileType = TileType(rawValue: bytes[99]) ?? .unknown
            minZoom = Int(bytes[100])
            maxZoom = Int(bytes[101])
            bounds = (degrees(102), degrees(106), degrees(110), degrees(114))
        }

        /// Whether the tile lies in the archive's zooms and touches its bounds.
        func covers(z: Int, x: Int, y: Int) -> Bool {
            guard (minZoom...maxZoom).contains(z), z <= 30, (0..<(1 << z)).contains(x), (0..<(1 << z)).contains(y) else { return false }
            let scale = Double(1 << z)
            let west = Double(x) / scale * 360 - 180
            let east = Double(x + 1) / scale * 360 - 180
            func latitude(_ row: Int) -> Double { atan(sinh(Double.pi * (1 - 2 * Double(row) / scale))) * 180 / Double.pi }
            return west < bounds.east && east > bounds.west && latitude(y + 1) < bounds.north && latitude(y) > bounds.south
        }
    }

    /// One run of a directory: tiles from `tileID` for `runLength` ids, all with the same bytes at `offset`
    /// (in the tile data); a run length of 0 names a leaf directory at `offset` (in the leaf directories).
    struct Entry: Sendable, Equatable {
        var tileID: UInt64
        var offset: UInt64
        var length: UInt64
        var runLength: UInt64
    }

    /// A tile's id: the tiles of every lower zoom counted first, then its place along the zoom's Hilbert curve.
    static func tileID(z: Int, x: Int, y: Int) -> UInt64 {
        var id = ((UInt64(1) << UInt64(2 * z)) - 1) / 3
        var x = UInt64(x)
        var y = UInt64(y)
        var level = z - 1
        while level >= 0 {
            let size = UInt64(1) << UInt64(level)
            let right: UInt64 = x & size != 0 ? 1 : 0
            let top: UInt64 = y & size != 0 ? 1 : 0
            id += ((3 * right) ^ top) << UInt64(2 * level)
            // The quadrant is turned so that the curve inside it runs on from the last one.
            if top == 0 {
                if right == 1 {
                    x = ~x & (size - 1)
                    y = ~y & (size - 1)
                }
                (x, y) = (y, x)
            }
            level -= 1
        }
        return id
    }

    /// A directory as written: its entry count, then the tile ids (each as the step from the one before),
    /// the run lengths, the lengths and the offsets (0 for "right after the entry before", else offset + 1),
    /// each a column of varints.
    static func directory(_ bytes: [UInt8]) throws(Failure) -> [Entry] {
        var position = 0
        func varint() throws(Failure) -> UInt64 {
            var value: UInt64 = 0
            var shift: UInt64 = 0
            while true {
                guard position < bytes.count, shift < 64 else { throw Failure(reason: "truncated directory") }
                let byte = bytes[position]
                position += 1
                value |= UInt64(byte & 0x7f) << shift
                if byte & 0x80 == 0 { return value }
                shift += 7
            }
        }
        let count = try varint()
        // Each entry takes at least four bytes: a count beyond that is a lie, not an allocation to make.
        guard count <= UInt64(bytes.count) else { throw Failure(reason: "directory claims \(count) entries") }
        var entries = [Entry](repeating: Entry(tileID: 0, offset: 0, length: 0, runLength: 0), count: Int(count))
        var last: UInt64 = 0
        for index in entries.indices {
            let (sum, overflow) = last.addingReportingOverflow(try varint())
            guard !overflow else { throw Failure(reason: "tile ids overflow") }
            last = sum
            entries[index].tileID = last
        }
        for index in entries.indices { entries[index].runLength = try varint() }
        for index in entries.indices { entries[index].length = try varint() }
        for index in entries.indices {
            let value = try varint()
            if value == 0, index > 0 {
                entries[index].offset = entries[index - 1].offset &+ entries[index - 1].length
            } else {
                guard value > 0 else { throw Failure(reason: "first offset missing") }
                entries[index].offset = value - 1
            }
        }
        return entries
    }

    /// The entry that holds `tileID`: the last one starting at or before it, if its run reaches it or it
    /// names a leaf directory (where the search goes on).
    static func find(_ tileID: UInt64, in entries: [Entry]) -> Entry? {
        var low = 0
        var high = entries.count
        while low < high {
            let middle = (low + high) / 2
            if entries[middle].tileID <= tileID { low = middle + 1 } else { high = middle }
        }
        guard low > 0 else { return nil }
        let entry = entries[low - 1]
        if entry.runLength == 0 || tileID - entry.tileID < entry.runLength { return entry }
        return nil
    }
}
