import Foundation
import NIOCore
import OnTheMapShared
import Testing

/// Each wire type is written by hand with `JSONWriter` (for the exact bytes clients depend on) and read
/// with `Codable`. These tests hold the two forms together: the hand-written bytes read back as the same
/// value, and hold every key `JSONEncoder` writes for it, with the same value, and only the extras named.
@Suite struct WireRoundTripTests {
    static let deletion = LocationDeleted(
        objectId: ObjectID("CDHfAy8sdp"), uniqueKey: "3903878747", deletedAt: Timestamp(iso8601: "2015-03-10T00:00:00.001Z")!)

    func expectOneForm<Wire: Codable & Equatable>(
        _ value: Wire, handWritten: ByteBuffer, extras: Set<String> = [], sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        #expect(try JSONDecoder().decode(Wire.self, from: Data(handWritten.readableBytesView)) == value, sourceLocation: sourceLocation)
        let written = try #require(try JSONSerialization.jsonObject(with: Data(handWritten.readableBytesView)) as? [String: Any])
        let encoded = try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(value)) as? [String: Any])
        #expect(Set(written.keys) == Set(encoded.keys).union(extras), sourceLocation: sourceLocation)
        let shared = written.filter { encoded[$0.key] != nil }
        #expect(NSDictionary(dictionary: shared) == NSDictionary(dictionary: encoded), sourceLocation: sourceLocation)
    }

    @Test func studentLocation() throws {
        try expectOneForm(Fixtures.jarrod, handWritten: Fixtures.jarrod.json)
    }

    @Test func studentLocationList() throws {
        let list = StudentLocationList(results: [Fixtures.jarrod, Fixtures.jarrod])
        try expectOneForm(list, handWritten: list.json)
    }

    @Test func postAnswerWithTheMisspelledCopy() throws {
        let answer = PostLocationAnswer(createdAt: Fixtures.jarrod.createdAt, objectId: Fixtures.jarrod.objectId)
        try expectOneForm(answer, handWritten: answer.json, extras: ["createAt"])
    }

    @Test func putAnswer() throws {
        let answer = PutLocationAnswer(updatedAt: Fixtures.jarrod.updatedAt, objectId: Fixtures.jarrod.objectId, createAt: Fixtures.jarrod.createdAt)
        try expectOneForm(answer, handWritten: answer.json)
    }

    @Test func parseError() throws {
        let error = ParseError(.incorrectType, "latitude must be a number.")
        try expectOneForm(error, handWritten: error.json)
    }

    @Test func deletion() throws {
        try expectOneForm(Self.deletion, handWritten: Self.deletion.json)
    }

    @Test func changePage() throws {
        let page = LocationChangePage(
            events: [
                LocationChangeEvent(id: "736-1", change: .upserted(Fixtures.jarrod), type: .posted),
                LocationChangeEvent(id: "737-2", change: .deleted(Self.deletion), type: .deleted),
            ], cursor: "737-2")
        try expectOneForm(page, handWritten: page.json)
        let reset = LocationChangePage(events: [], cursor: "900-7", reset: true)
        try expectOneForm(reset, handWritten: reset.json)
    }

    @Test func pinBodyWithAndWithoutItsOptionalFields() throws {
        let full = LocationInput(
            uniqueKey: "1234", firstName: "Zoë", lastName: "王", mapString: "Mountain View, CA", mediaURL: "https://udacity.com",
            latitude: 37.386052, longitude: -122.0838511111111)
        try expectOneForm(full, handWritten: full.json)
        let sparse = LocationInput(mediaURL: "https://udacity.com")
        try expectOneForm(sparse, handWritten: sparse.json)
    }

    @Test func actorHeader() throws {
        let actor = Actor(key: "3903878747", firstName: "Zoë \"Ш\"", lastName: "王")
        try expectOneForm(actor, handWritten: ByteBuffer(bytes: try #require(Base64URL.decode(actor.headerValue))))
        #expect(Actor(headerValue: actor.headerValue) == actor)
    }
}
