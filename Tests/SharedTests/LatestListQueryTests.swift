import OnTheMapShared
import Testing

/// The spellings of the default list request that both services answer from their ready copy.
@Suite struct LatestListQueryTests {
    @Test(arguments: [nil, "", "limit=100&order=-updatedAt", "order=-updatedAt&limit=100", "limit=100&skip=0&order=-updatedAt", "limit=100"])
    func theDefaultListInAnySpelling(_ query: String?) {
        #expect(LatestListQuery.matches(query.map { Substring($0) }))
    }

    @Test(arguments: ["limit=5", "limit=100&skip=1", "limit=100&uniqueKey=1234", "order=createdAt", "limit=1000&order=-updatedAt"])
    func anyOtherListIsNot(_ query: String) {
        #expect(!LatestListQuery.matches(Substring(query)))
    }
}
