import ContentCoding
import Foundation
import NIOCore
import TestSupport
import Testing

@Suite struct NegotiationTests {
    @Test(arguments: [
        // What real clients send: URLSession, browsers, curl --compressed, Python's urllib asked for gzip.
        ("gzip, deflate, br", ContentCoding.br),
        ("gzip, deflate, br, zstd", .br),
        ("deflate, gzip", .gzip),
        ("gzip", .gzip),
        ("x-gzip", .gzip),
        ("GZIP", .gzip),
        ("br;q=1.0, gzip;q=0.8, *;q=0.1", .br),
        // Weights decide, then brotli before gzip before none.
        ("gzip;q=1, br;q=0.5", .gzip),
        ("br;q=0.5, gzip;q=0.5", .br),
        ("gzip;q=0.5, identity", .identity),
        ("*", .br),
        ("*;q=0.5, br;q=0", .gzip),
        // Refused, unknown, empty or malformed: as is.
        ("gzip;q=0", .identity),
        ("gzip;q=0, br;q=0.000", .identity),
        ("deflate", .identity),
        ("identity", .identity),
        ("", .identity),
        ("gzip;q=2", .identity),
        ("gzip;q=abc", .identity),
        (" , ;q=1,", .identity),
        ("  br  ;  q=0.9 ,gzip;q=0.8", .br),
        // Weights as written: a point with no digit before or after it, other parameters beside them.
        ("gzip;q=.5, br;q=0.4", .gzip),
        ("gzip;q=1., br;q=0.999", .gzip),
        ("br;level=4;q=0.2, gzip;Q=0.3", .gzip),
        ("gzip;q=1.5", .identity),
        ("gzip;q=1.001", .identity),
        ("gzip;q=0.5.5", .identity),
        ("gzip;q=.", .identity),
        ("gzip;q=-0", .identity),
        ("gzip;q=1e-1, br;q=0.05", .br),
        ("gzip;q= 0.5", .identity),
        ("gzip;q=, br;q=0.5", .gzip),
        ("br;;q=0.1;, gzip;q=0.01", .br),
    ])
    func theClientsPreferenceAmongWhatItAccepts(header: String, expected: ContentCoding) {
        #expect(ContentCoding.negotiate(header) == expected, "\(header)")
    }

    @Test func noHeaderIsAnsweredAsIs() {
        #expect(ContentCoding.negotiate(nil as String?) == .identity)
    }

    /// The header read in place, byte by byte, chooses as the plain reading below does, on headers made of
    /// the pieces real and broken ones are made of: 20,000 of them, and each also as part of a longer string.
    @Test func readingInPlaceChoosesAsSplittingTheHeaderDoes() {
        let pieces = [
            "gzip", "GZip", "x-gzip", "br", "BR", "identity", "*", "deflate", "zstd", "gz", " ", "\t", ",", ", ", ";", "q=", "Q=", "q", "=",
            "0", "1", ".", "5", "08", "000", "e", "-", "+", "ä",
        ]
        var random = SeededRandom(seed: 49)
        var codings: [ContentCoding: Int] = [:]
        for _ in 0..<20_000 {
            let header = (0..<Int.random(in: 1...14, using: &random)).map { _ in pieces.randomElement(using: &random)! }.joined()
            let expected = PlainNegotiation.negotiate(header)
            #expect(ContentCoding.negotiate(header) == expected, "\(header.debugDescription)")
            // Not at the start of its string's bytes, as a header is inside the request it came in.
            let request = "Accept-Encoding: " + header + "\r\n"
            let value = Substring(request.utf8.dropFirst(17).dropLast(2))
            #expect(ContentCoding.negotiate(value) == expected, "\(header.debugDescription) inside a longer string")
            codings[expected, default: 0] += 1
        }
        // The pieces reach every answer.
        #expect(ContentCoding.allCases.allSatisfy { codings[$0, default: 0] >= 500 }, "\(codings)")
    }

    @Test func eachCodedFormHasItsOwnTagAndEveryTagNamesTheContent() {
        #expect(EntityTags.coded(#""abc""#, .gzip) == #""abc-gzip""#)
        #expect(EntityTags.coded(#""abc""#, .br) == #""abc-br""#)
        #expect(EntityTags.coded(#""abc""#, .identity) == #""abc""#)
        #expect(EntityTags.coded(#"W/"abc""#, .br) == #"W/"abc-br""#)
        for header in [#""abc""#, #""abc-gzip""#, #""abc-br""#, #"W/"abc-gzip""#, #""x", "abc-br""#, "*", #" "abc" "#] {
            #expect(EntityTags.ifNoneMatch(header, namesAnyFormOf: #""abc""#), "\(header)")
        }
        for header in [#""abd""#, #""abc-zstd""#, #""ab-gzip""#, #""abc-gzip-br""#, #"abc"#, ""] {
            #expect(!EntityTags.ifNoneMatch(header, namesAnyFormOf: #""abc""#), "\(header)")
        }
    }
}

/// How a client's preference is read, written the plain way: the header split into items and each item
/// into its parameters, as strings. A weight is digits with at most one point among them, from 0 to 1.
enum PlainNegotiation {
    static func negotiate(_ header: String) -> ContentCoding {
        var weights: [String: Double] = [:]
        items: for item in header.split(separator: ",", omittingEmptySubsequences: false) {
            let parts = item.split(separator: ";", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: [" ", "\t"]) }
            let name = parts[0].lowercased() == "x-gzip" ? "gzip" : parts[0].lowercased()
            guard !name.isEmpty else { continue }
            var weight = 1.0
            for parameter in parts.dropFirst() where parameter.count > 2 && parameter.lowercased().hasPrefix("q=") {
                let text = parameter.dropFirst(2)
                guard text.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }), text.filter({ $0 == "." }).count <= 1,
                    text.contains(where: \.isNumber), let value = Double(text), value <= 1
                else { continue items }
                weight = value
            }
            weights[name] = max(weights[name] ?? 0, weight)
        }
        let any = weights["*"]
        let br = weights["br"] ?? any ?? 0
        let gzip = weights["gzip"] ?? any ?? 0
        let identity = weights["identity"] ?? any ?? 0
        let (best, bestWeight) = gzip > br ? (ContentCoding.gzip, gzip) : (ContentCoding.br, br)
        return bestWeight == 0 || identity > bestWeight ? .identity : best
    }
}

@Suite struct CodecTests {
    static let inputs: [[UInt8]] = {
        var generator = SeededRandom(seed: 11)
        return [
            [], Array("a".utf8), Array(String(repeating: "On The Map ", count: 5_000).utf8),
            (0..<70_000).map { _ in UInt8.random(in: 0...255, using: &generator) },
            (0..<100_000).map { _ in UInt8.random(in: 97...100, using: &generator) },
        ]
    }()

    @Test func gzipReadsBackWithGzipTheTool() async throws {
        for input in Self.inputs {
            let compressed = Gzip.compress(input)
            #expect(try await gunzipWithTheTool(compressed) == input, "\(input.count) bytes")
            #expect(try Gzip.decompress(compressed, limit: 1 << 20) == input)
        }
    }

    @Test func brotliReadsBack() throws {
        for input in Self.inputs {
            for quality in [Brotli.defaultQuality, Brotli.bestQuality] {
                #expect(try Brotli.decompress(Brotli.compress(input, quality: quality), limit: 1 << 20) == input, "\(input.count) bytes")
            }
        }
    }

    @Test func aCutOrOverlongStreamIsRefused() throws {
        let text = Array(String(repeating: "On The Map draws its own world. ", count: 200).utf8)
        let gzipped = Gzip.compress(text)
        #expect(throws: Gzip.Failure.malformed) { try Gzip.decompress(Array(gzipped.prefix(gzipped.count / 2)), limit: 1 << 20) }
        #expect(throws: Gzip.Failure.malformed) { try Gzip.decompress(gzipped + [0], limit: 1 << 20) }
        #expect(throws: Gzip.Failure.tooLarge) { try Gzip.decompress(gzipped, limit: 100) }
        #expect(throws: Gzip.Failure.malformed) { try Gzip.decompress(Array(repeating: 0, count: 40), limit: 100) }
        let brotli = Brotli.compress(text)
        #expect(throws: Brotli.Failure.malformed) { try Brotli.decompress(Array(brotli.prefix(brotli.count / 2)), limit: 1 << 20) }
        #expect(throws: Brotli.Failure.tooLarge) { try Brotli.decompress(brotli, limit: 100) }
        #expect(throws: Brotli.Failure.malformed) { try Brotli.decompress(Array(repeating: 0xff, count: 40), limit: 100) }
    }

    @Test func aFormIsMadeOnceAndOnlyWhenItIsSmaller() throws {
        let text = ByteBuffer(string: String(repeating: #"{"firstName":"Ada","mapString":"London"},"#, count: 100))
        let forms = CodedForms(text)
        let (gzipped, coding) = forms.body(.gzip)
        #expect(coding == .gzip)
        #expect(try Gzip.decompress(Array(gzipped.readableBytesView), limit: 1 << 20) == Array(text.readableBytesView))
        #expect(forms.body(.gzip).body == gzipped)
        let (brotli, brotliCoding) = forms.body(.br)
        #expect(brotliCoding == .br)
        #expect(try Brotli.decompress(Array(brotli.readableBytesView), limit: 1 << 20) == Array(text.readableBytesView))
        #expect(forms.body(.identity) == (text, .identity))
        // Random bytes do not compress, and a short body is not worth it: both are sent as they are.
        var generator = SeededRandom(seed: 3)
        let noise = ByteBuffer(bytes: (0..<4_000).map { _ in UInt8.random(in: 0...255, using: &generator) })
        #expect(CodedForms(noise).body(.gzip) == (noise, .identity))
        #expect(CodedForms(noise).body(.br) == (noise, .identity))
        let short = ByteBuffer(string: #"{"results":[]}"#)
        #expect(CodedForms(short).body(.br) == (short, .identity))
    }
}
