import OnTheMapShared
import Testing

@Suite struct ObjectIDTests {
    @Test func newIdsAreTenLettersAndDigitsEveryOnePossibleInEveryPlace() {
        let ids = (0..<10_000).map { _ in ObjectID.random().rawValue }
        #expect(Set(ids).count == ids.count)
        #expect(ids.allSatisfy { $0.utf8.count == 10 && ObjectID($0).isWellFormed && !$0.contains("-") && !$0.contains("_") })
        let alphabet = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
        for place in 0..<10 {
            let seen = Set(ids.map { Array($0)[place] })
            #expect(seen == alphabet, "place \(place) never showed \(alphabet.subtracting(seen).sorted())")
        }
    }
}
