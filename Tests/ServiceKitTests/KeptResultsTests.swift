import ServiceKit
import Synchronization
import Testing

@Suite struct KeptResultsTests {
    @Test func aResultIsWorkedOutOnceAndANilOneEachTime() {
        let kept = KeptResults<String, Int>(capacity: 10)
        let made = Mutex(0)
        func parse(_ text: String) -> Int? {
            made.withLock { $0 += 1 }
            return Int(text)
        }
        for _ in 0..<3 {
            #expect(kept.value(for: "42", making: parse) == 42)
            #expect(kept.value(for: "forty-two", making: parse) == nil)
        }
        // "42" once, "forty-two" every time: a key that names nothing is not kept.
        #expect(made.withLock { $0 } == 4)
        #expect(kept.count == 1)
    }

    @Test func whenFullAllAreForgottenAndTheNewOneKept() {
        let kept = KeptResults<Int, String>(capacity: 3)
        for key in 0..<3 { _ = kept.value(for: key) { "\($0)" } }
        #expect(kept.count == 3)
        #expect(kept.value(for: 3) { "\($0)" } == "3")
        #expect(kept.count == 1)
        // The forgotten ones are worked out again, as they were.
        #expect(kept.value(for: 0) { "again \($0)" } == "again 0")
    }
}
