import Geocoding
import OnTheMapShared
import Testing

/// The embedded gazetteer answers the place strings students type, the place most people mean first.
@Suite struct GazetteerTests {
    let gazetteer: Gazetteer

    init() throws { gazetteer = try Gazetteer.bundled() }

    struct Expectation: Sendable, CustomTestStringConvertible {
        var query: String
        var countryCode: String
        var latitude: Double
        var longitude: Double
        var testDescription: String { query }
    }

    static let commonQueries = [
        Expectation(query: "Mountain View, CA", countryCode: "US", latitude: 37.386, longitude: -122.084),
        Expectation(query: "Huntsville, Alabama", countryCode: "US", latitude: 34.730, longitude: -86.586),
        Expectation(query: "Patiala, Punjab", countryCode: "IN", latitude: 30.336, longitude: 76.392),
        Expectation(query: "Berlin", countryCode: "DE", latitude: 52.524, longitude: 13.411),
        Expectation(query: "São Paulo, Brazil", countryCode: "BR", latitude: -23.548, longitude: -46.636),
        Expectation(query: "Lagos, Nigeria", countryCode: "NG", latitude: 6.454, longitude: 3.395),
    ]

    func best(_ query: String) -> GeocodeCandidate? { gazetteer.search(query, limit: 1).first }

    @Test(arguments: commonQueries)
    func commonQueriesFindTheRightPlace(_ expected: Expectation) throws {
        let place = try #require(best(expected.query))
        #expect(place.countryCode == expected.countryCode)
        #expect(abs(place.latitude - expected.latitude) < 0.5)
        #expect(abs(place.longitude - expected.longitude) < 0.5)
    }

    @Test func candidatesNameTheirRegionAndCountry() throws {
        let place = try #require(best("Mountain View, CA"))
        #expect(place.name == "Mountain View")
        #expect(place.region == "California")
        #expect(place.country == "United States")
        #expect(place.displayName == "Mountain View, California, United States")
    }

    @Test func caseAndAccentsDoNotMatter() throws {
        #expect(best("SAO PAULO, brazil")?.name == "São Paulo")
        #expect(best("berlin")?.countryCode == "DE")
        #expect(best("  patiala ,  PUNJAB ")?.countryCode == "IN")
        #expect(best("zurich")?.countryCode == "CH")
        #expect(best("Lodz")?.countryCode == "PL")
    }

    @Test func anAmbiguousNamePrefersTheLargerPlace() {
        let lagos = gazetteer.search("Lagos", limit: 5)
        #expect(lagos.first?.countryCode == "NG")
        #expect(lagos.contains { $0.countryCode == "PT" })
        let berlin = gazetteer.search("Berlin", limit: 10)
        #expect(berlin.first?.countryCode == "DE")
        #expect(berlin.dropFirst().contains { $0.region == "New Hampshire" })
    }

    @Test func aQualifierChangesTheAnswer() {
        #expect(best("Paris")?.countryCode == "FR")
        #expect(best("Paris, TX")?.region == "Texas")
        #expect(best("Paris, Ontario")?.countryCode == "CA")
        #expect(best("Lagos, Portugal")?.countryCode == "PT")
        #expect(best("Huntsville")?.region == "Alabama")
        #expect(best("Huntsville, TX")?.region == "Texas")
    }

    @Test func qualifiersMayBeAbbreviationsCodesOrCommonCountryForms() {
        #expect(best("London, ON")?.countryCode == "CA")
        #expect(best("Newcastle, NSW")?.region == "New South Wales")
        #expect(best("Cambridge, UK")?.countryCode == "GB")
        #expect(best("Cambridge, MA")?.region == "Massachusetts")
        #expect(best("Portland, ME, USA")?.region == "Maine")
        #expect(best("Valencia, ES")?.countryCode == "ES")
    }

    @Test func aQualifierWithoutACommaIsUnderstood() {
        #expect(best("Mountain View CA")?.region == "California")
        #expect(best("Berlin Germany")?.countryCode == "DE")
    }

    @Test func wellKnownOtherNamesFindTheCity() {
        #expect(best("New York, NY")?.name == "New York City")
        #expect(best("Cologne")?.name == "Köln")
        #expect(best("Kiev")?.countryCode == "UA")
    }

    @Test func nonsenseFindsNothing() {
        #expect(gazetteer.search("Xqzzyv Plokk", limit: 5).isEmpty)
        #expect(gazetteer.search("", limit: 5).isEmpty)
        #expect(gazetteer.search(" , ,", limit: 5).isEmpty)
    }

    @Test func theLimitIsHonoured() {
        #expect(gazetteer.search("Springfield", limit: 3).count == 3)
        #expect(gazetteer.search("Springfield", limit: 1).count == 1)
        #expect(gazetteer.search("Springfield", limit: 0).isEmpty)
        #expect(gazetteer.search("Springfield", limit: 100).count > 10)
    }

    @Test func geocodeIsTheSameSearch() async throws {
        #expect(try await gazetteer.geocode("Lagos, Nigeria", limit: 2) == gazetteer.search("Lagos, Nigeria", limit: 2))
    }

    @Test func lookupsAreFast() {
        let clock = ContinuousClock()
        let elapsed = clock.measure {
            for _ in 0..<200 {
                _ = gazetteer.search("Mountain View, CA", limit: 5)
                _ = gazetteer.search("Springfield", limit: 5)
                _ = gazetteer.search("sao paulo, brazil", limit: 5)
            }
        }
        // 600 lookups; generous so a loaded machine still passes, yet far below a scan of every place.
        #expect(elapsed < .seconds(3))
    }
}
