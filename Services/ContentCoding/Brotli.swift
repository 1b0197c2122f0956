import CBrotli

/// Brotli (RFC 7932) through Debian's libbrotli.
public enum Brotli {
    /// The quality answers made for each new version of a list are coded at: on the latest 100 (34 KB of
    /// JSON) it costs what gzip's default does and comes out a fifth smaller; quality 11 is an eighth smaller
    /// again but takes 200 times as long (BENCHMARKS.md, "Coding the latest 100"). The web client's files,
    /// made once, take 11.
    public static let defaultQuality: Int32 = 5
    public static let bestQuality: Int32 = 11

    public enum Failure: Error, Equatable {
        /// Not a complete brotli stream.
        case malformed
        /// The stream decodes to more than the limit given.
        case tooLarge
    }

    public static func compress(_ input: [UInt8], quality: Int32 = defaultQuality) -> [UInt8] {
        input.withUnsafeBytes { compress($0, quality: quality) }
    }

    public static func compress(_ input: UnsafeRawBufferPointer, quality: Int32 = defaultQuality) -> [UInt8] {
        let bound = BrotliEncoderMaxCompressedSize(input.count)
        precondition(bound > 0, "brotli cannot bound an input of \(input.count) bytes")
        return [UInt8](unsafeUninitializedCapacity: bound) { output, written in
            var size = bound
            let done = BrotliEncoderCompress(
                quality, BROTLI_DEFAULT_WINDOW, BROTLI_MODE_TEXT, input.count,
                input.bindMemory(to: UInt8.self).baseAddress, &size, output.baseAddress)
            precondition(done == BROTLI_TRUE, "brotli failed within its bound")
            written = size
        }
    }

    /// The bytes a brotli stream holds, whole, refused past `limit` bytes.
    public static func decompress(_ input: [UInt8], limit: Int) throws(Failure) -> [UInt8] {
        guard let decoder = BrotliDecoderCreateInstance(nil, nil, nil) else { throw .malformed }
        defer { BrotliDecoderDestroyInstance(decoder) }
        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16_384)
        let failure: Failure? = input.withUnsafeBufferPointer { input in
            var nextIn = input.baseAddress
            var availableIn = input.count
            while true {
                var availableOut = chunk.count
                let result = chunk.withUnsafeMutableBufferPointer { chunk in
                    var nextOut = chunk.baseAddress
                    return BrotliDecoderDecompressStream(decoder, &availableIn, &nextIn, &availableOut, &nextOut, nil)
                }
                output.append(contentsOf: chunk[0..<(chunk.count - availableOut)])
                if output.count > limit { return .tooLarge }
                switch result {
                case BROTLI_DECODER_RESULT_SUCCESS: return availableIn == 0 ? nil : .malformed
                case BROTLI_DECODER_RESULT_NEEDS_MORE_OUTPUT: continue
                default: return .malformed
                }
            }
        }
        if let failure { throw failure }
        return output
    }
}
