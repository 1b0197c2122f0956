// Micro-measurements behind claims in the code's comments, each against the simpler code it replaced:
// `Base64URL` (the `X-Actor` header) against Foundation's base64 with replacements, and `NameFolder`
// (the gazetteer's keys) against Foundation's folding per name. Both ways must give the same answers;
// the program says how many differ. Then what each level of gzip and brotli costs and saves on the latest
// 100, the levels `Gzip.defaultLevel` and `Brotli.defaultQuality` are chosen by. Prints a section for
// BENCHMARKS.md.
//
// Usage: MicroBenchmarks <gazetteer.tsv>   (bench/run.py runs it, built for release)
import ContentCoding
import Foundation
import Geocoding
import OnTheMapShared

/// The best of five timings of `body`, in seconds: the least disturbed by whatever else ran.
func best(_ body: () -> Int) -> (seconds: Double, check: Int) {
    var fastest = Double.infinity
    var check = 0
    for _ in 0..<5 {
        let start = ContinuousClock.now
        check = body()
        let elapsed = ContinuousClock.now - start
        fastest = min(fastest, Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
    }
    return (fastest, check)
}

// MARK: the X-Actor header

enum FoundationBase64URL {
    static func encode(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    static func decode(_ text: String) -> [UInt8]? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.utf8.count % 4) % 4)
        return Data(base64Encoded: base64).map { Array($0) }
    }
}

let actor = Actor(key: "5550001000", firstName: "Amara", lastName: "Okonkwo-Adébáyọ̀")
let actorJSON = Base64URL.decode(actor.headerValue)!
let header = actor.headerValue
let headerRounds = 200_000
precondition(FoundationBase64URL.encode(actorJSON) == header && FoundationBase64URL.decode(header) == actorJSON)

let encodeOurs = best { (0..<headerRounds).reduce(0) { sum, _ in sum &+ Base64URL.encode(actorJSON).utf8.count } }
let encodeFoundation = best { (0..<headerRounds).reduce(0) { sum, _ in sum &+ FoundationBase64URL.encode(actorJSON).utf8.count } }
let decodeOurs = best { (0..<headerRounds).reduce(0) { sum, _ in sum &+ (Base64URL.decode(header)?.count ?? 0) } }
let decodeFoundation = best { (0..<headerRounds).reduce(0) { sum, _ in sum &+ (FoundationBase64URL.decode(header)?.count ?? 0) } }

// MARK: the gazetteer's keys

/// The rules of `NameFolder`, written the plain way: Foundation folds each whole name, then each
/// character is kept, dropped or made a space.
func plainFold(_ name: Substring) -> String {
    let strokes: [Unicode.Scalar: String] = [
        "ł": "l", "ø": "o", "đ": "d", "ı": "i", "æ": "ae", "œ": "oe", "ħ": "h", "þ": "th", "ð": "d", "ŧ": "t", "ŀ": "l",
    ]
    let dropped: Set<Unicode.Scalar> = [".", "'", "`", "\u{2018}", "\u{2019}", "\u{02BC}", "\u{02BB}", "\u{02BE}", "\u{02BF}", "\u{00B4}"]
    var out = ""
    var pendingSpace = false
    for scalar in name.folding(options: [.caseInsensitive, .diacriticInsensitive], locale: nil).lowercased().unicodeScalars {
        let properties = scalar.properties
        switch properties.generalCategory {
        case .nonspacingMark, .spacingMark, .enclosingMark, .format: continue
        default: break
        }
        if dropped.contains(scalar) { continue }
        guard properties.isAlphabetic || properties.numericType != nil else {
            pendingSpace = true
            continue
        }
        if pendingSpace, !out.isEmpty { out += " " }
        pendingSpace = false
        out += strokes[scalar] ?? String(scalar)
    }
    return out
}

guard CommandLine.arguments.count == 2, let text = try? String(contentsOfFile: CommandLine.arguments[1], encoding: .utf8) else {
    FileHandle.standardError.write(Data("usage: MicroBenchmarks <gazetteer.tsv>\n".utf8))
    exit(2)
}
// The first field of every line: a place's, region's or country's name.
let names = text.split(separator: "\n").map { $0.prefix { $0 != "\t" } }.filter { !$0.isEmpty }
var folder = NameFolder()
let differing = names.filter { folder.fold($0) != plainFold($0) }.count
let foldOurs = best {
    var folder = NameFolder()
    return names.reduce(0) { $0 &+ folder.fold($1).utf8.count }
}
let foldPlain = best { names.reduce(0) { $0 &+ plainFold($1).utf8.count } }
precondition(foldOurs.check == foldPlain.check || differing > 0)

// MARK: coding the latest 100

/// The latest 100 as the benchmarks seed them (bench/limits.py's seed_read_pins): about 34 KB of JSON.
let latest: [UInt8] = {
    let places = [
        "Mountain View, California, United States", "Berlin, Brandenburg, Germany", "Lagos, Lagos State, Nigeria",
        "Kyoto, Kyoto Prefecture, Japan", "Sao Paulo, Sao Paulo, Brazil",
    ]
    let firsts = ["Ada", "Grace", "Alan", "Edsger", "Barbara", "Donald", "Margaret", "Ken"]
    let lasts = ["Lovelace", "Hopper", "Turing", "Dijkstra", "Liskov", "Knuth"]
    var pins: [StudentLocation] = []
    for i in 1...100 {
        let now = Timestamp(millisecondsSince1970: 1_795_000_000_000 + Int64(i) * 1_733)
        let latitude = Double(i % 80) + Double(100_000 + i * 7919 % 900_000) / 1e6
        let longitude: Double = -(Double(i % 170) + Double(100_000 + i * 104_729 % 900_000) / 1e6)
        let link = "https://www.udacity.com/course/ios-developer-nanodegree--nd003?student=\(i)"
        pins.append(
            StudentLocation(
                objectId: .random(), uniqueKey: String(3_903_878_700 + i), firstName: firsts[i % 8], lastName: lasts[i % 6],
                mapString: places[i % 5], mediaURL: link, latitude: latitude, longitude: longitude, createdAt: now, updatedAt: now))
    }
    return Array(StudentLocationList(results: pins).json.readableBytesView)
}()
let codingRounds = 50
var codings: [(name: String, size: Int, timing: (seconds: Double, check: Int))] = []
for level: Int32 in [1, 6, 9] {
    let use = level == Gzip.defaultLevel ? " (answers)" : ""
    let timing = best { (0..<codingRounds).reduce(0) { sum, _ in sum &+ Gzip.compress(latest, level: level).count } }
    codings.append(("gzip \(level)\(use)", Gzip.compress(latest, level: level).count, timing))
}
for quality: Int32 in [1, 5, 9, 11] {
    let use = quality == Brotli.defaultQuality ? " (answers)" : quality == Brotli.bestQuality ? " (web client's files)" : ""
    let timing = best { (0..<codingRounds).reduce(0) { sum, _ in sum &+ Brotli.compress(latest, quality: quality).count } }
    codings.append(("brotli \(quality)\(use)", Brotli.compress(latest, quality: quality).count, timing))
}

// MARK: the report

#if DEBUG
let build = "debug build"
#else
let build = "release build"
#endif
func grouped(_ count: Int) -> String { count.formatted(.number.grouping(.automatic).locale(Locale(identifier: "en_US"))) }
func nanoseconds(_ timing: (seconds: Double, check: Int), per count: Int) -> String {
    grouped(Int((timing.seconds / Double(count) * 1e9).rounded())) + " ns"
}
func ratio(_ simple: (seconds: Double, check: Int), _ ours: (seconds: Double, check: Int)) -> String {
    String(format: "%.1f×", simple.seconds / ours.seconds)
}
print(
    """
    ## Micro-measurements

    `MicroBenchmarks` (bench/micro, \(build)): the code behind a claim in a comment against the
    simpler code it replaced, with the same answers (checked: the header both ways, and the names, of
    which \(grouped(differing)) of \(grouped(names.count)) fold differently). Best of 5 timings, \(ProcessInfo.processInfo.activeProcessorCount) cores.

    | What | Ours | Simpler code | Simpler / ours |
    | --- | --- | --- | --- |
    | `X-Actor` header (\(actorJSON.count) bytes of JSON), encode: `Base64URL.encode` vs `Data.base64EncodedString` + 3 replacements | \
    \(nanoseconds(encodeOurs, per: headerRounds)) | \(nanoseconds(encodeFoundation, per: headerRounds)) | \(ratio(encodeFoundation, encodeOurs)) |
    | `X-Actor` header, decode: `Base64URL.decode` vs 2 replacements, padding + `Data(base64Encoded:)` | \
    \(nanoseconds(decodeOurs, per: headerRounds)) | \(nanoseconds(decodeFoundation, per: headerRounds)) | \(ratio(decodeFoundation, decodeOurs)) |
    | Gazetteer names folded to keys (\(grouped(names.count)) names): `NameFolder` vs Foundation's folding per name | \
    \(String(format: "%.0f ms", foldOurs.seconds * 1000)) | \(String(format: "%.0f ms", foldPlain.seconds * 1000)) | \(ratio(foldPlain, foldOurs)) |
    """)
print(
    """

    ### Coding the latest 100

    What each level costs to compress the latest 100 (\(grouped(latest.count)) bytes of JSON, as the benchmarks
    seed them) once, and what it saves: the levels answers are made at, once per version of a list, come from
    this table. Best of 5 timings of \(codingRounds) compressions each.

    | Coding | Bytes | Of the plain | Time to compress once |
    | --- | --- | --- | --- |
    """)
for coding in codings {
    let share = String(format: "%.1f%%", Double(coding.size) / Double(latest.count) * 100)
    let time = String(format: "%.0f µs", coding.timing.seconds / Double(codingRounds) * 1e6)
    print("| \(coding.name) | \(grouped(coding.size)) | \(share) | \(time) |")
}
