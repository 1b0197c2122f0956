import Foundation
import ServiceKit
import Testing

/// The restore ledger keeps each action as one line and gives back, in order, those a restore must do again.
@Suite struct RestoreLedgerTests {
    static func scratch() -> RestoreLedger {
        RestoreLedger(path: FileManager.default.temporaryDirectory.appendingPathComponent("ledger-\(UUID().uuidString).jsonl").path)
    }

    @Test func recordsFromAMomentOnComeBackOldestFirst() throws {
        let ledger = Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: ledger.path) }
        let start = Date(timeIntervalSince1970: 1_795_000_000)
        try ledger.append(.init(at: start, kind: .hidden, pin: "abcDEF1234", operatorName: "ops", reason: "spam"))
        try ledger.append(.init(at: start.addingTimeInterval(60), kind: .erased, account: "1017501859"))
        try ledger.append(.init(at: start.addingTimeInterval(30), kind: .disabled, account: "42", operatorName: "ops"))

        let since = try ledger.records(since: start.addingTimeInterval(10))
        #expect(since.map(\.kind) == [.disabled, .erased])
        #expect(since.last == .init(at: start.addingTimeInterval(60), kind: .erased, account: "1017501859"))
        #expect(try ledger.records(since: start).count == 3)
    }

    @Test func anErasureLineHoldsTheKeyAndTheTimeAlone() throws {
        let ledger = Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: ledger.path) }
        try ledger.append(.init(at: Date(timeIntervalSince1970: 1_795_000_000.25), kind: .erased, account: "1017501859"))
        let text = try String(contentsOfFile: ledger.path, encoding: .utf8)
        #expect(text == #"{"account":"1017501859","at":"2026-11-18T11:06:40.250Z","kind":"erased"}"# + "\n")
    }

    @Test func noLedgerYetMeansNothingToDoAgain() throws {
        #expect(try Self.scratch().records(since: .distantPast).isEmpty)
    }

    @Test func aLineThatIsNoRecordStopsTheRestoreWithItsNumber() throws {
        let ledger = Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: ledger.path) }
        try ledger.append(.init(kind: .erased, account: "1"))
        try Data("not json\n".utf8).append(toFile: ledger.path)
        #expect(throws: RestoreLedger.LedgerError.self) { try ledger.records(since: .distantPast) }
    }
}

extension Data {
    fileprivate func append(toFile path: String) throws {
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        defer { try? handle.close() }
        try handle.seekToEnd()
        try handle.write(contentsOf: self)
    }
}
