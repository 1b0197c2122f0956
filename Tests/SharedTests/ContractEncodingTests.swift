import Foundation
import NIOCore
import OnTheMapShared
import Testing

/// The wire types write exactly the bytes the contract shows.
@Suite struct ContractEncodingTests {
    @Test func studentLocationMatchesTheContractSampleByteForByte() {
        #expect(
            String(buffer: Fixtures.jarrod.json) == """
                {"objectId":"CDHfAy8sdp","uniqueKey":"3903878747","firstName":"Jarrod","lastName":"Parkes","mapString":"Huntsville, Alabama","mediaURL":"https://www.linkedin.com/in/jarrodparkes","latitude":34.7303688,"longitude":-86.5861037,"createdAt":"2015-02-25T01:10:38.103Z","updatedAt":"2015-03-09T22:04:50.315Z"}
                """)
    }

    @Test func listEnvelopeWrapsResults() {
        #expect(String(buffer: StudentLocationList(results: []).json) == #"{"results":[]}"#)
        let two = String(buffer: StudentLocationList(results: [Fixtures.jarrod, Fixtures.jarrod]).json)
        #expect(two.hasPrefix(#"{"results":[{"objectId":"CDHfAy8sdp""#))
        #expect(two.contains(#""2015-03-09T22:04:50.315Z"},{"objectId""#))
        #expect(two.hasSuffix("}]}"))
    }

    @Test func postAnswerRepeatsCreatedAtAsCreateAt() {
        let answer = PostLocationAnswer(createdAt: Timestamp(iso8601: "2015-03-11T02:48:18.321Z")!, objectId: ObjectID("CDHfAy8sdp"))
        #expect(
            String(buffer: answer.json)
                == #"{"createdAt":"2015-03-11T02:48:18.321Z","objectId":"CDHfAy8sdp","createAt":"2015-03-11T02:48:18.321Z"}"#)
    }

    @Test func putAnswerCarriesThePostKeysToo() {
        let answer = PutLocationAnswer(
            updatedAt: Timestamp(iso8601: "2015-03-11T02:56:49.997Z")!, objectId: ObjectID("CDHfAy8sdp"),
            createAt: Timestamp(iso8601: "2015-03-11T02:48:18.321Z")!)
        #expect(
            String(buffer: answer.json)
                == #"{"updatedAt":"2015-03-11T02:56:49.997Z","objectId":"CDHfAy8sdp","createAt":"2015-03-11T02:48:18.321Z"}"#)
    }

    @Test func changePageReadsBackAsWrittenWithDeletionsAndNamesInAnyScript() throws {
        var renamed = Fixtures.jarrod
        renamed.firstName = "Zoë \"Ш\" 王"
        let deletion = LocationDeleted(
            objectId: ObjectID("CDHfAy8sdp"), uniqueKey: "3903878747",
            deletedAt: Timestamp(iso8601: "2015-03-10T00:00:00.001Z")!)
        let page = LocationChangePage(
            events: [
                LocationChangeEvent(id: "736-1", change: .upserted(renamed), type: .posted),
                LocationChangeEvent(id: "737-2", change: .deleted(deletion), type: .deleted),
            ], cursor: "737-2")
        #expect(try JSONDecoder().decode(LocationChangePage.self, from: Data(page.json.readableBytesView)) == page)
        #expect(
            String(buffer: page.json).hasSuffix(
                #"{"id":"737-2","type":"LocationDeleted","deletion":{"objectId":"CDHfAy8sdp","uniqueKey":"3903878747","deletedAt":"2015-03-10T00:00:00.001Z"}}],"cursor":"737-2"}"#
            ))
        let empty = LocationChangePage(events: [], cursor: "now")
        #expect(String(buffer: empty.json) == #"{"events":[],"cursor":"now"}"#)
    }

    @Test func parseErrorBody() {
        #expect(
            String(buffer: ParseError(.objectNotFound, "Object not found.").json)
                == #"{"code":101,"error":"Object not found."}"#)
    }

    @Test func textIsEscapedAndNonASCIIKeptAsUTF8() {
        var location = Fixtures.jarrod
        location.firstName = "João \"JJ\"\\\n\t\u{1}"
        let json = String(buffer: location.json)
        #expect(json.contains(#""firstName":"João \"JJ\"\\\n\t\u0001""#))
        let decoded = try? JSONSerialization.jsonObject(with: Data(location.json.readableBytesView)) as? [String: Any]
        #expect(decoded?["firstName"] as? String == location.firstName)
    }

    @Test func coordinatesAreJSONNumbers() {
        var location = Fixtures.jarrod
        location.latitude = 37
        location.longitude = -0.000012
        let json = String(buffer: location.json)
        #expect(json.contains(#""latitude":37,"longitude":-1.2e-05,"#))
        let decoded = try? JSONSerialization.jsonObject(with: Data(location.json.readableBytesView)) as? [String: Any]
        #expect(decoded?["longitude"] as? Double == -0.000012)
    }

    @Test func codableRoundTripKeepsEveryField() throws {
        let decoded = try JSONDecoder().decode(StudentLocation.self, from: Data(Fixtures.jarrod.json.readableBytesView))
        #expect(decoded == Fixtures.jarrod)
    }
}

@Suite struct TimestampTests {
    @Test func formatsUTCWithThreeFractionalDigitsAndZ() {
        #expect(Timestamp(millisecondsSince1970: 0).iso8601 == "1970-01-01T00:00:00.000Z")
        #expect(Timestamp(millisecondsSince1970: 1_425_949_490_315).iso8601 == "2015-03-10T01:04:50.315Z")
        #expect(Timestamp(millisecondsSince1970: 951_782_400_007).iso8601 == "2000-02-29T00:00:00.007Z")
        #expect(Timestamp(millisecondsSince1970: -1).iso8601 == "1969-12-31T23:59:59.999Z")
        #expect(Timestamp(millisecondsSince1970: 253_402_300_799_999).iso8601 == "9999-12-31T23:59:59.999Z")
        #expect(Timestamp(millisecondsSince1970: 253_402_300_800_000).iso8601 == "10000-01-01T00:00:00.000Z")
        #expect(Timestamp(millisecondsSince1970: -62_167_219_200_000).iso8601 == "0000-01-01T00:00:00.000Z")
    }

    /// Against the C library's calendar: any millisecond from 1900 to 9999 reads as `gmtime` says.
    @Test func formatsAsTheCLibrarysCalendarDoes() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<20_000 {
            let ms = Int64.random(in: -2_208_988_800_000...253_402_300_799_999, using: &generator)
            var seconds = time_t(ms >= 0 ? ms / 1000 : (ms - 999) / 1000)
            var parts = tm()
            gmtime_r(&seconds, &parts)
            let expected = String(
                format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday, parts.tm_hour,
                parts.tm_min, parts.tm_sec, Int32(ms - Int64(seconds) * 1000))
            #expect(Timestamp(millisecondsSince1970: ms).iso8601 == expected)
        }
    }

    @Test func parsesWhatItFormatsAndTruncatesExtraDigits() {
        for ms: Int64 in [0, 1, 999, 1_425_949_490_315, 4_102_444_800_000, -86_400_001] {
            #expect(Timestamp(iso8601: Timestamp(millisecondsSince1970: ms).iso8601)?.millisecondsSince1970 == ms)
        }
        #expect(Timestamp(iso8601: "2015-05-10T16:48:30.760460Z")?.iso8601 == "2015-05-10T16:48:30.760Z")
        #expect(Timestamp(iso8601: "2015-05-10T16:48:30Z")?.iso8601 == "2015-05-10T16:48:30.000Z")
        #expect(Timestamp(iso8601: "2015-05-10 16:48:30Z") == nil)
        #expect(Timestamp(iso8601: "2015-13-10T16:48:30Z") == nil)
        #expect(Timestamp(iso8601: "yesterday") == nil)
    }

    @Test func daysAMonthDoesNotHaveAreRefusedNotRolledIntoTheNext() {
        for missing in ["2015-02-29", "2015-02-31", "2015-04-31", "1900-02-29", "2015-00-10", "2015-01-00", "2015-01-32"] {
            #expect(Timestamp(iso8601: missing + "T00:00:00Z") == nil, "\(missing) is no day")
        }
        for day in ["2016-02-29", "2000-02-29", "2015-01-31", "2015-04-30", "2015-12-31"] {
            #expect(Timestamp(iso8601: day + "T00:00:00Z")?.iso8601 == day + "T00:00:00.000Z")
        }
    }

    @Test func theLastLeapSecondFourDigitsCanWriteIsRefusedNotRolledIntoYearTenThousand() {
        #expect(Timestamp(iso8601: "9999-12-31T23:59:60Z") == nil)
        #expect(Timestamp(iso8601: "9999-12-31T23:59:59.999Z")?.iso8601 == "9999-12-31T23:59:59.999Z")
        let leap = Timestamp(iso8601: "2016-12-31T23:59:60Z")
        #expect(leap?.iso8601 == "2017-01-01T00:00:00.000Z")
    }

    @Test func survivesARoundTripThroughDate() {
        for ms: Int64 in [1_425_949_490_315, 1_763_779_000_103, 1_999_999_999_999] {
            let timestamp = Timestamp(millisecondsSince1970: ms)
            #expect(Timestamp(timestamp.date) == timestamp)
        }
    }
}

@Suite struct ActorHeaderTests {
    @Test func roundTripsNonASCIINamesAsUnpaddedBase64URL() {
        let actor = Actor(key: "7770002222", firstName: "João", lastName: "Araújo-Ñúñez 李")
        let header = actor.headerValue
        #expect(!header.contains("="))
        #expect(!header.contains("+"))
        #expect(!header.contains("/"))
        #expect(Actor(headerValue: header) == actor)
    }

    @Test func rejectsGarbageAndEmptyKeys() {
        #expect(Actor(headerValue: "%%%") == nil)
        #expect(Actor(headerValue: "") == nil)
        let emptyKey = Actor(key: "", firstName: "A", lastName: "B").headerValue
        #expect(Actor(headerValue: emptyKey) == nil)
    }
}

@Suite struct LocationInputTests {
    @Test func readsTheContractBodyAndIgnoresUnknownKeys() throws {
        let input = try LocationInput.decode(
            Array(
                """
                {
                  "uniqueKey" : "1234", "firstName":"John","lastName":"Doe","mapString":"Mountain View, CA",
                  "mediaURL":"https:\\/\\/udacity.com","latitude":37.386052,"longitude":-122.083851,
                  "createdAt":"", "objectID": "", "ACL": {}
                }
                """.utf8))
        #expect(
            input
                == LocationInput(
                    uniqueKey: "1234", firstName: "John", lastName: "Doe", mapString: "Mountain View, CA",
                    mediaURL: "https://udacity.com", latitude: 37.386052, longitude: -122.083851))
    }

    @Test func nullCountsAsAbsentAndIntegersAreNumbers() throws {
        let input = try LocationInput.decode(Array(#"{"mapString":null,"latitude":37,"longitude":-122}"#.utf8))
        #expect(input.mapString == nil)
        #expect(input.latitude == 37)
    }

    @Test func wrongTypesNameTheField() {
        #expect(throws: LocationInput.ReadError.wrongType(field: "latitude", expected: "a number")) {
            try LocationInput.decode(Array(#"{"latitude":"37.3"}"#.utf8))
        }
        #expect(throws: LocationInput.ReadError.wrongType(field: "longitude", expected: "a number")) {
            try LocationInput.decode(Array(#"{"longitude":false}"#.utf8))
        }
        #expect(throws: LocationInput.ReadError.wrongType(field: "mediaURL", expected: "a string")) {
            try LocationInput.decode(Array(#"{"mediaURL":["x"]}"#.utf8))
        }
        #expect(throws: LocationInput.ReadError.malformedJSON) { try LocationInput.decode(Array("{".utf8)) }
        #expect(throws: LocationInput.ReadError.notAnObject) { try LocationInput.decode(Array("[]".utf8)) }
    }
}

@Suite struct Base64URLTests {
    @Test(arguments: ["", "f", "fo", "foo", "foob", "fooba", "foobar"])
    func matchesTheRFCVectorsWithoutPadding(_ text: String) {
        let expected = ["": "", "f": "Zg", "fo": "Zm8", "foo": "Zm9v", "foob": "Zm9vYg", "fooba": "Zm9vYmE", "foobar": "Zm9vYmFy"][text]
        #expect(Base64URL.encode(Array(text.utf8)) == expected)
        #expect(Base64URL.decode(expected ?? "") == Array(text.utf8))
    }

    @Test func usesTheURLAlphabetAndRefusesEverythingElse() {
        #expect(Base64URL.encode([0xFB, 0xFF]) == "-_8")
        #expect(Base64URL.decode("-_8") == [0xFB, 0xFF])
        #expect(Base64URL.decode("+/8") == nil)
        #expect(Base64URL.decode("Zg==") == nil)
        #expect(Base64URL.decode("Z") == nil)
    }
}
