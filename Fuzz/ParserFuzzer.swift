import Foundation

/// The parsers that read what clients send, each with the properties its output must keep.
///
/// Built with `--sanitize=fuzzer -Xswiftc -DFUZZING` (scripts/fuzz.sh), libFuzzer drives
/// `LLVMFuzzerTestOneInput` and `FUZZ_PARSER` names the parser. Built normally, the same binary replays
/// inputs: `FUZZ_PARSER=actor ParserFuzzer crash-1234…`.
enum Parser: String, CaseIterable {
    case locationInput = "location-input"
    case `where`
    case timestamp
    case actor
    case cookie
    case bearer

    func test(_ input: [UInt8]) {
        switch self {
        case .locationInput: FuzzTargets.locationInput(input)
        case .where: FuzzTargets.whereFilter(input)
        case .timestamp: FuzzTargets.timestamp(input)
        case .actor: FuzzTargets.actor(input)
        case .cookie: FuzzTargets.cookie(input)
        case .bearer: FuzzTargets.bearer(input)
        }
    }

    static let chosen: Parser = {
        let name = ProcessInfo.processInfo.environment["FUZZ_PARSER"] ?? ""
        guard let parser = Parser(rawValue: name) else {
            let names = Parser.allCases.map(\.rawValue).joined(separator: ", ")
            FileHandle.standardError.write(Data("FUZZ_PARSER must be one of: \(names)\n".utf8))
            exit(2)
        }
        return parser
    }()
}

@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    Parser.chosen.test(data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? [])
    return 0
}

#if !FUZZING
@main enum ReplayInputs {
    static func main() throws {
        let paths = CommandLine.arguments.dropFirst()
        for path in paths {
            Parser.chosen.test(Array(try Data(contentsOf: URL(fileURLWithPath: path))))
        }
        print("\(Parser.chosen.rawValue): \(paths.count) inputs, no property broken")
    }
}
#endif
