import Foundation
import OnTheMapClient
import OnTheMapShared
import TestSupport
import Testing

/// The calls, against the gateway's router in memory: what a program built on the library sees.
@Suite(.serialized) struct ClientCallsTests {
    @Test func aStudentSignsUpLogsInPostsChangesAndDeletesAPin() async throws {
        try await MemorySystem.with { system in
            let anonymous = system.client()
            let key = try await anonymous.signUp(email: "ada@example.com", password: "correct horse battery", firstName: "Ada", lastName: "Lovelace")
            let session = try await anonymous.logIn(email: "Ada@Example.com", password: "correct horse battery")
            #expect(session.accountKey == key)
            let ada = system.client(session)
            let me = try await ada.me()
            #expect(me == UserProfile(key: key, firstName: "Ada", lastName: "Lovelace", email: "ada@example.com"))

            let place = try #require(try await ada.geocode("Patiala, Punjab").first)
            #expect(abs(place.latitude - 30.34) < 0.3 && abs(place.longitude - 76.39) < 0.3)
            let id = try await ada.postPin("Patiala, Punjab", latitude: place.latitude, longitude: place.longitude)
            let pin = try await ada.location(id)
            #expect(pin.uniqueKey == key && pin.firstName == "Ada" && pin.mapString == "Patiala, Punjab")
            #expect(try await anonymous.list(.init(uniqueKey: key)).map(\.objectId) == [id])
            #expect(try await anonymous.list(.init(where: #"{"uniqueKey":"\#(key)"}"#)).map(\.objectId) == [id])
            #expect(String(decoding: try await anonymous.listJSON(.init(limit: 1)), as: UTF8.self).hasPrefix(#"{"results":[{"objectId":"\#(id)""#))

            let moved = try await ada.update(id, LocationInput(mapString: "Berlin", latitude: 52.52, longitude: 13.40))
            #expect(moved.objectId == id)
            #expect(try await ada.location(id).mapString == "Berlin")
            try await ada.delete(id)
            #expect(try await anonymous.list(.init(uniqueKey: key)).isEmpty)
        }
    }

    @Test func theExchangeLogRedactsPasswordsAndSessionIDs() async throws {
        try await MemorySystem.with { system in
            let lines = LockedLines()
            var client = system.client()
            client.exchangeLog = { lines.append($0) }
            try await client.signUp(email: "ada@example.com", password: "correct horse battery", firstName: "Ada", lastName: "Lovelace")
            let session = try await client.logIn(email: "ada@example.com", password: "correct horse battery")
            client.session = session
            _ = try await client.me()
            try await client.logOut()
            let text = lines.text
            #expect(text.contains("> POST \(system.url)/v1/session"))
            #expect(text.contains("< 200"))
            #expect(!text.contains("correct horse battery"))
            #expect(!text.contains(session.id))
            #expect(text.contains("<redacted>"))
        }
    }
}

/// Lines a callback reports, and a wait for one of them.
final class LockedLines: Sendable {
    private let lines = Watched<[String]>([])
    func append(_ line: String) { lines.update { $0.append(line) } }
    var text: String { lines.value.joined(separator: "\n") }
    var all: [String] { lines.value }

    /// Whether `line` has been reported, now or within `limit`.
    func contains(_ line: String, within limit: Duration) async -> Bool {
        await lines.wait(within: limit) { $0.contains(line) }
    }
}
