import Foundation
import OnTheMapShared
import TestSupport
import Testing

@testable import OnTheMapClient

/// The live feed as an `AsyncSequence`: changes as they happen, and nothing lost or repeated across a
/// gateway restart.
@Suite(.serialized) struct LiveChangesTests {
    @Test func eventFramesAreReadFromAnyChunking() {
        let stream = Array(
            "retry: 3000\n: connected\n\nid: 5-1\nevent: LocationPosted\ndata: {\"a\":1}\n\n: heartbeat\n\nid: 6-2\r\nevent: LocationDeleted\r\ndata: {}\r\n\r\n"
                .utf8)
        for size in [1, 2, 7, stream.count] {
            var parser = ServerSentEventParser()
            var events: [ServerSentEvent] = []
            var index = 0
            while index < stream.count {
                events += parser.consume(stream[index..<min(index + size, stream.count)])
                index += size
            }
            #expect(
                events == [
                    ServerSentEvent(id: "5-1", event: "LocationPosted", data: "{\"a\":1}"),
                    ServerSentEvent(id: "6-2", event: "LocationDeleted", data: "{}"),
                ], "chunks of \(size)")
        }
    }

    @Test func changesArriveAndAGatewayRestartLosesAndRepeatsNothing() async throws {
        try await ClientSystem.with { system in
            let ada = try await system.student("ada@example.com")
            let statuses = LockedLines()
            let feed = system.client().liveChanges(maximumPause: .milliseconds(500)) { status in
                if case .connected = status { statuses.append("connected") } else { statuses.append("disconnected") }
            }
            var updates = feed.makeAsyncIterator()
            func nextChange() async throws -> LocationChangeEvent? {
                let update = try await updates.next()
                if case .change(let change)? = update { return change }
                #expect(update == nil, "a resume within the window was answered with reset")
                return nil
            }
            try #require(await statuses.contains("connected", within: .seconds(10)), "never connected")

            let first = try await ada.postPin("Lagos, Nigeria")
            let posted = try #require(try await nextChange())
            #expect(posted.type == .posted && posted.location?.objectId == first)

            await system.stopGateway()
            // While this gateway is down, the student posts through another replica.
            let other = try await system.secondGateway()
            defer { other.terminate() }
            let elsewhere = OnTheMapClient(gateway: "http://127.0.0.1:\(other.port)", session: ada.session)
            let second = try await elsewhere.postPin("Accra, Ghana")
            try await elsewhere.delete(first)
            try await system.startGatewayAgain()

            let missed = try #require(try await nextChange())
            #expect(missed.type == .posted && missed.location?.objectId == second)
            let deleted = try #require(try await nextChange())
            #expect(deleted.type == .deleted && deleted.deletion?.objectId == first)
            let third = try await ada.postPin("Nairobi, Kenya")
            let live = try #require(try await nextChange())
            #expect(live.location?.objectId == third, "a change came twice or out of order: \(live)")
            #expect(statuses.all.contains("disconnected"))
        }
    }
}
