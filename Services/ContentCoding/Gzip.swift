import CZlib

/// gzip (RFC 1952) through zlib.
public enum Gzip {
    /// The level answers are coded at: zlib's default, 6. On the latest 100 (34 KB of JSON) level 9 makes
    /// them 2% smaller for three times the time (BENCHMARKS.md, "Coding the latest 100").
    public static let defaultLevel: Int32 = 6

    public enum Failure: Error, Equatable {
        /// Not a complete gzip stream.
        case malformed
        /// The stream inflates to more than the limit given.
        case tooLarge
    }

    public static func compress(_ input: [UInt8], level: Int32 = defaultLevel) -> [UInt8] {
        input.withUnsafeBytes { compress($0, level: level) }
    }

    public static func compress(_ input: UnsafeRawBufferPointer, level: Int32 = defaultLevel) -> [UInt8] {
        var stream = z_stream()
        // windowBits 15 + 16: a gzip header and trailer around the DEFLATE stream.
        let started = deflateInit2_(
            &stream, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size))
        precondition(started == Z_OK, "zlib could not start a gzip stream (\(started))")
        defer { deflateEnd(&stream) }
        let bound = Int(deflateBound(&stream, uLong(input.count)))
        return [UInt8](unsafeUninitializedCapacity: bound) { output, written in
            stream.next_in = UnsafeMutablePointer(mutating: input.bindMemory(to: Bytef.self).baseAddress)
            stream.avail_in = uInt(input.count)
            stream.next_out = output.baseAddress
            stream.avail_out = uInt(bound)
            let result = deflate(&stream, Z_FINISH)
            // deflateBound is an upper bound: a single call with Z_FINISH completes.
            precondition(result == Z_STREAM_END, "zlib did not finish a gzip stream within its bound (\(result))")
            written = Int(stream.total_out)
        }
    }

    /// The bytes a gzip stream holds (one member, whole), refused past `limit` bytes.
    public static func decompress(_ input: [UInt8], limit: Int) throws(Failure) -> [UInt8] {
        var stream = z_stream()
        guard inflateInit2_(&stream, 15 + 16, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else { throw .malformed }
        defer { inflateEnd(&stream) }
        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16_384)
        let result: Int32 = input.withUnsafeBufferPointer { input in
            stream.next_in = UnsafeMutablePointer(mutating: input.baseAddress)
            stream.avail_in = uInt(input.count)
            while true {
                let status = chunk.withUnsafeMutableBufferPointer { chunk in
                    stream.next_out = chunk.baseAddress
                    stream.avail_out = uInt(chunk.count)
                    return inflate(&stream, Z_NO_FLUSH)
                }
                output.append(contentsOf: chunk[0..<(chunk.count - Int(stream.avail_out))])
                if output.count > limit { return Z_MEM_ERROR }
                if status == Z_STREAM_END { return stream.avail_in == 0 ? Z_STREAM_END : Z_DATA_ERROR }
                // Out of input before the end, or a stream zlib cannot read.
                if status != Z_OK || (stream.avail_in == 0 && stream.avail_out != 0) { return Z_DATA_ERROR }
            }
        }
        switch result {
        case Z_STREAM_END: return output
        case Z_MEM_ERROR: throw .tooLarge
        default: throw .malformed
        }
    }
}
