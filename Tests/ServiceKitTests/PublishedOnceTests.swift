import Testing

@testable import ServiceKit

/// A value made on first use and then read without a lock: one is kept whoever stores first, and it lives
/// exactly as long as its holder.
struct PublishedOnceTests {
    final class Made: Sendable {
        let number: Int

        init(_ number: Int) { self.number = number }
    }

    @Test func emptyUntilStoredThenTheFirstStoredIsEveryonesFromThenOn() async {
        let slot = PublishedOnce<Made>()
        #expect(slot.load() == nil)
        // Sixteen tasks race to store their own; all of them get the same one, and it stays.
        let kept = await withTaskGroup(of: Int.self, returning: Set<Int>.self) { group in
            for number in 0..<16 {
                group.addTask { slot.storeIfNil(Made(number)).number }
            }
            return await group.reduce(into: []) { $0.insert($1) }
        }
        #expect(kept.count == 1)
        #expect(slot.load()?.number == kept.first)
        #expect(slot.storeIfNil(Made(99)).number == kept.first)
    }

    @Test func theStoredValueLivesAsLongAsItsHolderAndNoLonger() {
        weak var stored: Made?
        weak var refused: Made?
        do {
            let slot = PublishedOnce<Made>()
            let first = Made(1)
            let second = Made(2)
            stored = first
            refused = second
            _ = slot.storeIfNil(first)
            _ = slot.storeIfNil(second)
            #expect(slot.load() === first)
        }
        #expect(stored == nil, "released with the slot")
        #expect(refused == nil, "a value not stored is not kept")
    }
}
