/// gzip's reverse (RFC 1952 around RFC 1951's DEFLATE: stored, fixed and dynamic Huffman blocks), for the
/// few kilobytes of a PMTiles archive's compressed directories. Canonical Huffman codes decoded a bit at a
/// time by counting codes per length: slow beside zlib, fast enough for directories read once and cached,
/// and with no C library to link. Every read is bounds-checked and the output is capped, since an archive
/// is a file the gateway did not write.
enum Inflate {
    struct Failure: Error, Equatable {
        let reason: String
    }

    /// The contents of a gzip member (the header's optional fields skipped; the trailer's length checked).
    static func gunzip(_ bytes: [UInt8], limit: Int) throws(Failure) -> [UInt8] {
        guard bytes.count >= 18, bytes[0] == 0x1f, bytes[1] == 0x8b, bytes[2] == 8 else { throw Failure(reason: "not gzip") }
        let flags = bytes[3]
        var start = 10
        if flags & 0x04 != 0 {
            guard start + 2 <= bytes.count else { throw Failure(reason: "truncated header") }
            start += 2 + Int(bytes[start]) + Int(bytes[start + 1]) << 8
        }
        for flag: UInt8 in [0x08, 0x10] where flags & flag != 0 {
            while start < bytes.count, bytes[start] != 0 { start += 1 }
            start += 1
        }
        if flags & 0x02 != 0 { start += 2 }
        guard start < bytes.count else { throw Failure(reason: "truncated header") }
        var reader = BitReader(bytes: bytes, position: start)
        let output = try inflate(&reader, limit: limit)
        let trailer = reader.alignedPosition + 4
        guard trailer + 4 <= bytes.count else { throw Failure(reason: "truncated trailer") }
        let size = (0..<4).reduce(UInt32(0)) { $0 | UInt32(bytes[trailer + $1]) << UInt32(8 * $1) }
        guard size == UInt32(truncatingIfNeeded: output.count) else { throw Failure(reason: "length mismatch") }
        return output
    }

    static func inflate(_ reader: inout BitReader, limit: Int) throws(Failure) -> [UInt8] {
        var output: [UInt8] = []
        var final = false
        while !final {
            final = try reader.bits(1) == 1
            switch try reader.bits(2) {
            case 0:
                try reader.storedBlock(into: &output, limit: limit)
            case 1:
                try decode(&reader, literals: fixedLiterals, distances: fixedDistances, into: &output, limit: limit)
            case 2:
                let (literals, distances) = try dynamicTables(&reader)
                try decode(&reader, literals: literals, distances: distances, into: &output, limit: limit)
            default:
                throw Failure(reason: "reserved block type")
            }
        }
        return output
    }

    private static func decode(
        _ reader: inout BitReader, literals: Huffman, distances: Huffman, into output: inout [UInt8], limit: Int
    ) throws(Failure) {
        while true {
            let symbol = try literals.decode(&reader)
            if symbol < 256 {
                guard output.count < limit else { throw Failure(reason: "larger than \(limit) bytes") }
                output.append(UInt8(symbol))
            } else if symbol == 256 {
                return
            } else {
                let index = symbol - 257
                guard index < lengthBases.count else { throw Failure(reason: "bad length symbol") }
                let length = lengthBases[index] + (try reader.bits(lengthExtraBits[index]))
                let code = try distances.decode(&reader)
                guard code < distanceBases.count else { throw Failure(reason: "bad distance symbol") }
                let distance = distanceBases[code] + (try reader.bits(distanceExtraBits[code]))
                guard distance <= output.count else { throw Failure(reason: "distance too far back") }
                guard output.count + length <= limit else { throw Failure(reason: "larger than \(limit) bytes") }
                let from = output.count - distance
                for offset in 0..<length { output.append(output[from + offset]) }
            }
        }
    }

    private static func dynamicTables(_ reader: inout BitReader) throws(Failure) -> (Huffman, Huffman) {
        let literalCount = try reader.bits(5) + 257
        let distanceCount = try reader.bits(5) + 1
        let codeLengthCount = try reader.bits(4) + 4
        var codeLengths = [Int](repeating: 0, count: 19)
        for index in 0..<codeLengthCount { codeLengths[codeLengthOrder[index]] = try reader.bits(3) }
        let codeLengthCode = try Huffman(lengths: codeLengths)
        var lengths: [Int] = []
        while lengths.count < literalCount + distanceCount {
            let symbol = try codeLengthCode.decode(&reader)
            switch symbol {
            case 0..<16:
                lengths.append(symbol)
            case 16:
                guard let previous = lengths.last else { throw Failure(reason: "repeat with nothing before") }
                lengths += repeatElement(previous, count: 3 + (try reader.bits(2)))
            case 17:
                lengths += repeatElement(0, count: 3 + (try reader.bits(3)))
            default:
                lengths += repeatElement(0, count: 11 + (try reader.bits(7)))
            }
        }
        guard lengths.count == literalCount + distanceCount else { throw Failure(reason: "too many code lengths") }
        return (try Huffman(lengths: Array(lengths[..<literalCount])), try Huffman(lengths: Array(lengths[literalCount...])))
    }

    private static let fixedLiterals = try! Huffman(
        lengths: [Int](repeating: 8, count: 144) + [Int](repeating: 9, count: 112) + [Int](repeating: 7, count: 24) + [Int](repeating: 8, count: 8))
    private static let fixedDistances = try! Huffman(lengths: [Int](repeating: 5, count: 30))
    private static let codeLengthOrder = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15]
    private static let lengthBases = [
        3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258,
    ]
    private static let lengthExtraBits = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0]
    private static let distanceBases = [
        1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073,
        4097, 6145, 8193, 12289, 16385, 24577,
    ]
    private static let distanceExtraBits = [0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13]

    /// A canonical Huffman code: how many codes each length has, and the symbols in code order.
    struct Huffman {
        var counts = [Int](repeating: 0, count: 16)
        var symbols: [Int] = []

        init(lengths: [Int]) throws(Failure) {
            for length in lengths {
                guard (0...15).contains(length) else { throw Failure(reason: "bad code length") }
                counts[length] += 1
            }
            counts[0] = 0
            var offsets = [Int](repeating: 0, count: 16)
            for length in 1..<15 { offsets[length + 1] = offsets[length] + counts[length] }
            symbols = [Int](repeating: 0, count: lengths.count)
            for (symbol, length) in lengths.enumerated() where length > 0 {
                symbols[offsets[length]] = symbol
                offsets[length] += 1
            }
        }

        func decode(_ reader: inout BitReader) throws(Failure) -> Int {
            var code = 0
            var first = 0
            var index = 0
            for length in 1...15 {
                code |= try reader.bits(1)
                let count = counts[length]
                if code - first < count { return symbols[index + code - first] }
                index += count
                first = (first + count) << 1
                code <<= 1
            }
            throw Failure(reason: "bad code")
        }
    }

    /// DEFLATE's bits, least significant first within each byte.
    struct BitReader {
        let bytes: [UInt8]
        var position: Int
        private var buffer = 0
        private var available = 0

        init(bytes: [UInt8], position: Int) {
            self.bytes = bytes
            self.position = position
        }

        mutating func bits(_ count: Int) throws(Failure) -> Int {
            while available < count {
                guard position < bytes.count else { throw Failure(reason: "truncated") }
                buffer |= Int(bytes[position]) << available
                position += 1
                available += 8
            }
            let value = buffer & ((1 << count) - 1)
            buffer >>= count
            available -= count
            return value
        }

        /// Where the next whole byte begins once the bits of the current one are dropped.
        var alignedPosition: Int { position - available / 8 }

        mutating func storedBlock(into output: inout [UInt8], limit: Int) throws(Failure) {
            position = alignedPosition
            buffer = 0
            available = 0
            guard position + 4 <= bytes.count else { throw Failure(reason: "truncated") }
            let length = Int(bytes[position]) | Int(bytes[position + 1]) << 8
            let complement = Int(bytes[position + 2]) | Int(bytes[position + 3]) << 8
            guard length == complement ^ 0xffff else { throw Failure(reason: "bad stored length") }
            position += 4
            guard position + length <= bytes.count else { throw Failure(reason: "truncated") }
            guard output.count + length <= limit else { throw Failure(reason: "larger than \(limit) bytes") }
            output += bytes[position..<(position + length)]
            position += length
        }
    }
}
