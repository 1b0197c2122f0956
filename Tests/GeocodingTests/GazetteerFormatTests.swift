import Testing

@testable import Geocoding

/// The gazetteer reads its own text format and refuses lines it does not understand.
@Suite struct GazetteerFormatTests {
    static let sample = """
        # two countries, three places
        =FR\tFrance\tFRA
        +Île-de-France\t
        Paris\t48.8534\t2.3488\t2138551\tLutetia|Parigi
        =US\tUnited States\tUSA|America
        +Texas\tTX
        Paris\t33.6609\t-95.5555\t24171
        +Tennessee\tTN
        Paris\t36.302\t-88.3267\t10156

        """

    @Test func readsCountriesRegionsAndPlaces() throws {
        let gazetteer = try Gazetteer(Self.sample)
        #expect(gazetteer.placeCount == 3)
        let paris = gazetteer.search("paris", limit: 5)
        #expect(paris.map(\.region) == ["Île-de-France", "Texas", "Tennessee"])
        #expect(paris.first?.displayName == "Paris, Île-de-France, France")
        #expect(paris.first?.latitude == 48.8534)
        #expect(paris.last?.longitude == -88.3267)
    }

    @Test func alternateNamesAndAliasesAreSearchable() throws {
        let gazetteer = try Gazetteer(Self.sample)
        #expect(gazetteer.search("Lutetia", limit: 1).first?.countryCode == "FR")
        #expect(gazetteer.search("Paris, America", limit: 1).first?.region == "Texas")
        #expect(gazetteer.search("Paris, TN", limit: 1).first?.region == "Tennessee")
        #expect(gazetteer.search("Paris, ile de france", limit: 1).first?.countryCode == "FR")
    }

    @Test func aMalformedLineIsReportedByNumber() {
        #expect(throws: GazetteerError.malformedLine(3)) {
            try Gazetteer("=FR\tFrance\t\n+Bretagne\t\nRennes\t48.1\n")
        }
        #expect(throws: GazetteerError.malformedLine(1)) {
            try Gazetteer("Rennes\t48.1\t-1.6\t220000\n")
        }
        #expect(throws: GazetteerError.malformedLine(2)) {
            try Gazetteer("=FR\tFrance\t\n+Bretagne\n")
        }
    }

    @Test func aPlaceWhoseNumbersDoNotReadIsLeftOut() throws {
        let gazetteer = try Gazetteer("=FR\tFrance\t\n+Bretagne\t\nRennes\tnorth\t-1.6\t220000\nRennes\t48.11\t-1.68\t220000\n")
        #expect(gazetteer.search("Rennes", limit: 5).map(\.latitude) == [48.11])
    }

    @Test func everyBundledPlaceReads() throws {
        // Places are read lazily, so this is where a bad line in the shipped file would show.
        let data = try Gazetteer.bundled().data
        let unreadable = (0..<Int32(data.places.count)).filter { data.place($0) == nil }
        #expect(unreadable.isEmpty)
        #expect(data.places.count > 150_000)
    }
}
