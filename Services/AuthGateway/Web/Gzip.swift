/// gzip (RFC 1952) around a DEFLATE stream (RFC 1951): LZ77 matches coded with DEFLATE's fixed Huffman
/// tables, in one block. Within a few percent of `gzip -6` on the web client's text, with no C library to
/// link: the gateway compresses each of its few static files once and keeps the bytes.
enum Gzip {
    static func compress(_ input: [UInt8]) -> [UInt8] {
        var bits = BitWriter()
        // ID1 ID2, CM = deflate, no flags, no modification time, no extra flags, OS unknown.
        bits.bytes = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255]
        bits.bytes.reserveCapacity(10 + input.count / 2)
        bits.write(1, count: 1)  // BFINAL
        bits.write(1, count: 2)  // BTYPE 01: fixed Huffman codes
        input.withUnsafeBufferPointer { Deflater(input: $0).encode(into: &bits) }
        bits.writeSymbol(256)  // end of block
        bits.flush()
        for value in [crc32(input), UInt32(truncatingIfNeeded: input.count)] {
            for shift in stride(from: 0, to: 32, by: 8) { bits.bytes.append(UInt8(truncatingIfNeeded: value >> UInt32(shift))) }
        }
        return bits.bytes
    }

    static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xffff_ffff
        for byte in bytes { crc = crcTable[Int((crc ^ UInt32(byte)) & 0xff)] ^ (crc >> 8) }
        return crc ^ 0xffff_ffff
    }

    private static let crcTable: [UInt32] = (0..<256).map { index in
        var value = UInt32(index)
        for _ in 0..<8 { value = value & 1 == 1 ? 0xedb8_8320 ^ (value >> 1) : value >> 1 }
        return value
    }
}

/// Greedy LZ77 over a 32 KiB window, found through hash chains of three-byte prefixes.
private struct Deflater {
    let input: UnsafeBufferPointer<UInt8>
    static let window = 32_768
    static let minimumMatch = 3
    static let maximumMatch = 258
    static let chainLimit = 64
    static let hashBits = 15

    func encode(into bits: inout BitWriter) {
        let count = input.count
        var head = [Int32](repeating: -1, count: 1 << Self.hashBits)
        var previous = [Int32](repeating: -1, count: count)
        func hash(_ at: Int) -> Int {
            let value = Int(input[at]) << 16 | Int(input[at + 1]) << 8 | Int(input[at + 2])
            return (value &* 2_654_435_761) >> (32 - Self.hashBits) & ((1 << Self.hashBits) - 1)
        }
        func insert(_ at: Int) {
            guard at + Self.minimumMatch <= count else { return }
            let key = hash(at)
            previous[at] = head[key]
            head[key] = Int32(at)
        }
        var position = 0
        while position < count {
            var bestLength = 0
            var bestDistance = 0
            if position + Self.minimumMatch <= count {
                let limit = min(Self.maximumMatch, count - position)
                var candidate = Int(head[hash(position)])
                var steps = 0
                while candidate >= 0, position - candidate <= Self.window, steps < Self.chainLimit {
                    if input[candidate + bestLength] == input[position + bestLength] || bestLength == 0 {
                        var length = 0
                        while length < limit, input[candidate + length] == input[position + length] { length += 1 }
                        if length > bestLength {
                            bestLength = length
                            bestDistance = position - candidate
                            if length == limit { break }
                        }
                    }
                    candidate = Int(previous[candidate])
                    steps += 1
                }
            }
            if bestLength >= Self.minimumMatch {
                bits.writeMatch(length: bestLength, distance: bestDistance)
                for at in position..<(position + bestLength) { insert(at) }
                position += bestLength
            } else {
                bits.writeSymbol(Int(input[position]))
                insert(position)
                position += 1
            }
        }
    }
}

/// DEFLATE's bit order: values least significant bit first, Huffman codes most significant bit first.
private struct BitWriter {
    var bytes: [UInt8] = []
    private var buffer: UInt64 = 0
    private var used = 0

    mutating func write(_ value: Int, count: Int) {
        buffer |= UInt64(value) << UInt64(used)
        used += count
        while used >= 8 {
            bytes.append(UInt8(truncatingIfNeeded: buffer))
            buffer >>= 8
            used -= 8
        }
    }

    mutating func flush() {
        if used > 0 { bytes.append(UInt8(truncatingIfNeeded: buffer)) }
        buffer = 0
        used = 0
    }

    /// A literal/length symbol (0...285) in the fixed code.
    mutating func writeSymbol(_ symbol: Int) {
        switch symbol {
        case 0...143: writeCode(0x30 + symbol, length: 8)
        case 144...255: writeCode(0x190 + symbol - 144, length: 9)
        case 256...279: writeCode(symbol - 256, length: 7)
        default: writeCode(0xc0 + symbol - 280, length: 8)
        }
    }

    mutating func writeMatch(length: Int, distance: Int) {
        let lengthIndex = Self.lengthBases.lastIndex { $0 <= length }!
        writeSymbol(257 + lengthIndex)
        write(length - Self.lengthBases[lengthIndex], count: Self.lengthExtraBits[lengthIndex])
        let distanceIndex = Self.distanceBases.lastIndex { $0 <= distance }!
        writeCode(distanceIndex, length: 5)
        write(distance - Self.distanceBases[distanceIndex], count: Self.distanceExtraBits[distanceIndex])
    }

    private mutating func writeCode(_ code: Int, length: Int) {
        var reversed = 0
        for bit in 0..<length { reversed |= (code >> bit & 1) << (length - 1 - bit) }
        write(reversed, count: length)
    }

    static let lengthBases = [3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258]
    static let lengthExtraBits = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0]
    static let distanceBases = [
        1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073,
        4097, 6145, 8193, 12289, 16385, 24577,
    ]
    static let distanceExtraBits = [0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13]
}
