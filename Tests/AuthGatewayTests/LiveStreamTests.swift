import AsyncHTTPClient
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import OnTheMapShared
import TestSupport
import Testing

@testable import AuthGateway
@testable import ServiceTwins

/// The live stream of pin changes, as a browser's EventSource reads it.
@Suite struct LiveStreamTests {
    /// A heartbeat as an EventSource reads it: a comment line, which fires no event.
    static let heartbeat = ": heartbeat\n\n"

    /// Reads Server-Sent Events frames from a live response.
    final class EventReader: @unchecked Sendable {
        private var iterator: HTTPClientResponse.Body.AsyncIterator
        private var pending = ""

        init(_ response: HTTPClientResponse) { iterator = response.body.makeAsyncIterator() }

        /// The next frame with an `id`, as its fields; comments and heartbeats are skipped.
        func next(within limit: Duration = .seconds(5)) async throws -> [String: String] {
            let deadline = ContinuousClock.now + limit
            while ContinuousClock.now < deadline {
                while let end = pending.range(of: "\n\n") {
                    let frame = pending[..<end.lowerBound]
                    pending.removeSubrange(..<end.upperBound)
                    var fields: [String: String] = [:]
                    for line in frame.split(separator: "\n") where !line.hasPrefix(":") {
                        let parts = line.split(separator: ":", maxSplits: 1)
                        if parts.count == 2 { fields[String(parts[0])] = parts[1].trimmingCharacters(in: .whitespaces) }
                    }
                    if fields["id"] != nil { return fields }
                }
                guard let chunk = try await iterator.next() else { break }
                pending += String(buffer: chunk)
            }
            throw HarnessError("no event within \(limit); unread: \(pending)")
        }

        /// Reads until `count` heartbeats have come (and nothing else).
        func heartbeats(_ count: Int, within limit: Duration) async throws {
            let start = ContinuousClock.now
            var text = pending
            while text.components(separatedBy: LiveStreamTests.heartbeat).count - 1 < count, ContinuousClock.now - start < limit {
                guard let chunk = try await iterator.next() else { break }
                text += String(buffer: chunk)
            }
            let beats = text.components(separatedBy: LiveStreamTests.heartbeat).count - 1
            guard beats >= count else { throw HarnessError("\(beats) heartbeats within \(limit): \(text)") }
            #expect(text.replacingOccurrences(of: LiveStreamTests.heartbeat, with: "") == "retry: 3000\n: connected\n\n")
        }
    }

    static func open(_ port: Int, lastEventID: String? = nil) async throws -> EventReader {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/v1/StudentLocation/events")
        request.headers.add(name: "Accept", value: "text/event-stream")
        if let lastEventID { request.headers.add(name: "Last-Event-ID", value: lastEventID) }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        #expect(response.status == .ok)
        #expect(response.headers.first(name: "Content-Type") == "text/event-stream")
        return EventReader(response)
    }

    @Test func aQuietStreamGetsAHeartbeatEveryInterval() async throws {
        try await withGatewaySocket(configure: { $0.liveHeartbeat = .milliseconds(100) }) { client, _ in
            // The stream is subscribed once its request has been sent, so three beats 100 ms apart take at
            // least 200 ms from here, however late they are read.
            let asked = ContinuousClock.now
            let events = try await Self.open(client.port!)
            try await events.heartbeats(3, within: .seconds(5))
            #expect(ContinuousClock.now - asked >= .milliseconds(200))
        }
    }

    /// A stream reads nothing from its client after the request, but it is not idle: it goes on past the
    /// connection's idle timeout for as long as it is written to.
    @Test func aStreamOutlivesTheIdleTimeout() async throws {
        try await withGatewaySocket(configure: {
            $0.liveHeartbeat = .milliseconds(100)
            $0.limits.idleTimeout = .milliseconds(500)
        }) { client, _ in
            let events = try await Self.open(client.port!)
            // 15 beats take 1.4 s at least: nearly three idle timeouts.
            try await events.heartbeats(15, within: .seconds(10))
        }
    }

    @Test func postsUpdatesAndDeletesArriveAsTheyHappen() async throws {
        try await withGatewaySocket { client, _ in
            let student = try await client.signedUpAndLoggedIn("live@example.com")
            // Subscribed before the answer's head is sent: what is posted from here on reaches it.
            let events = try await Self.open(client.port!)

            let id = try await client.postPin(as: student, mapString: "Lagos, Nigeria")
            let posted = try await events.next()
            #expect(posted["event"] == "LocationPosted")
            let pin = try JSONSerialization.jsonObject(with: Data((posted["data"] ?? "").utf8)) as? [String: Any]
            #expect(pin?["objectId"] as? String == id)
            #expect(pin?["mapString"] as? String == "Lagos, Nigeria")

            _ = try await client.send(.put, "/v1/StudentLocation/\(id)", body: #"{"mapString":"Abuja"}"#, headers: [student.bearer])
            let updated = try await events.next()
            #expect(updated["event"] == "LocationUpdated")
            #expect(updated["data"]?.contains("\"mapString\":\"Abuja\"") == true)

            _ = try await client.send(.delete, "/v1/StudentLocation/\(id)", headers: [student.bearer])
            let deleted = try await events.next()
            #expect(deleted["event"] == "LocationDeleted")
            #expect(deleted["data"]?.hasPrefix("{\"objectId\":\"\(id)\"") == true)
        }
    }

    @Test func reconnectingWithLastEventIDReplaysWhatWasMissedOnceThenGoesLive() async throws {
        try await withGatewaySocket { client, _ in
            let student = try await client.signedUpAndLoggedIn("resume@example.com")
            let first = try await Self.open(client.port!)
            _ = try await client.postPin(as: student, mapString: "Seen")
            let seen = try await first.next()
            let lastID = try #require(seen["id"])

            // While disconnected (the first reader is simply no longer read), two more pins arrive.
            let missedA = try await client.postPin(as: student, mapString: "Missed A")
            let missedB = try await client.postPin(as: student, mapString: "Missed B")
            let resumed = try await Self.open(client.port!, lastEventID: lastID)
            let replayA = try await resumed.next()
            let replayB = try await resumed.next()
            #expect(replayA["data"]?.contains(missedA) == true)
            #expect(replayB["data"]?.contains(missedB) == true)

            let live = try await client.postPin(as: student, mapString: "Live")
            let next = try await resumed.next()
            #expect(next["data"]?.contains(live) == true, "no duplicates of the replayed events: \(next)")
        }
    }

    /// `LIVE_RESUME_EVENTS` bounds what a resumed stream is sent: a cursor with more events after it gets one
    /// `reset` (its id the head, so a reconnect resumes from there) and then live changes, nothing older; one
    /// within it gets exactly the events after it, once.
    @Test func aResumeFromOutsideTheWindowGetsResetAndOneWithinItGetsExactlyWhatItMissed() async throws {
        try await withGatewaySocket(configure: {
            $0.liveResumeEvents = 3
            $0.writeLimit.burst = 20
        }) { client, _ in
            let student = try await client.signedUpAndLoggedIn("window@example.com")
            let watching = try await Self.open(client.port!)
            let pin = try await client.postPin(as: student, mapString: "Lagos")
            var ids = [try #require(try await watching.next()["id"])]
            func move(to place: String) async throws {
                let moved = try await client.send(.put, "/v1/StudentLocation/\(pin)", body: #"{"mapString":"\#(place)"}"#, headers: [student.bearer])
                #expect(moved.status == .ok)
            }
            for place in ["Abuja", "Accra", "Dakar", "Nairobi", "Kigali"] {
                try await move(to: place)
                ids.append(try #require(try await watching.next()["id"]))
            }

            // Four events after ids[1]: one more than the window.
            let outside = try await Self.open(client.port!, lastEventID: ids[1])
            let reset = try await outside.next()
            #expect(reset["event"] == "reset")
            #expect(reset["id"] == ids[5], "a reconnect after the reset resumes from the head")
            // Three after ids[2]: the window exactly.
            let within = try await Self.open(client.port!, lastEventID: ids[2])
            let missed = [try await within.next(), try await within.next(), try await within.next()]
            #expect(missed.map { $0["id"] } == Array(ids[3...5]))

            try await move(to: "Lusaka")
            let afterReset = try await outside.next()
            #expect(afterReset["event"] == "LocationUpdated" && afterReset["data"]?.contains("Lusaka") == true, "\(afterReset)")
            let afterMissed = try await within.next()
            #expect(afterMissed["event"] == "LocationUpdated" && afterMissed["data"]?.contains("Lusaka") == true, "\(afterMissed)")
            let fromTheStart = try await Self.open(client.port!, lastEventID: "0-0")
            #expect(try await fromTheStart.next()["event"] == "reset")
            // A cursor this log never gave (another deployment's) would hold back every change up to it.
            let fromElsewhere = try await Self.open(client.port!, lastEventID: "999999999-999999999")
            let elsewhere = try await fromElsewhere.next()
            #expect(elsewhere["event"] == "reset" && elsewhere["id"] != "999999999-999999999", "\(elsewhere)")
        }
    }

    /// Keep-alive HTTP/1.1, which every EventSource speaks, is streamed before the router; an HTTP/1.0
    /// client through it. Both get the same events; only the metrics tell which door answered.
    @Test func bothDoorsStreamTheSameChangesAndTheMetricsSayWhichAnswered() async throws {
        try await withGatewaySocket { client, _ in
            let port = try #require(client.port)
            let student = try await client.signedUpAndLoggedIn("live-doors@example.com")
            let before = try await answeredByDoor(client)
            var streams: [(minor: Int, connection: RawConnection, head: String)] = []
            for minor in [1, 0] {
                let connection = try RawConnection(port: port)
                try connection.send("GET /v1/StudentLocation/events HTTP/1.\(minor)\r\nHost: x\r\nX-Request-ID: live-\(minor)\r\n\r\n")
                streams.append((minor, connection, try await connection.receiveHead()))
            }
            let after = try await answeredByDoor(client)
            // The first read of /metrics is one more answer through the router.
            #expect(after["prepared", default: 0] - before["prepared", default: 0] == 1, "\(before) → \(after)")
            #expect(after["router", default: 0] - before["router", default: 0] == 2, "\(before) → \(after)")
            for (minor, _, head) in streams {
                let lines = head.lowercased().split(separator: "\r\n")
                #expect(head.hasPrefix("HTTP/1.1 200 OK\r\n"), "\(head)")
                #expect(lines.contains("content-type: text/event-stream") && lines.contains("cache-control: no-cache"), "\(head)")
                #expect(lines.contains("x-request-id: live-\(minor)") && lines.contains("x-content-type-options: nosniff"), "\(head)")
                #expect(!lines.contains { $0.hasPrefix("content-length") }, "\(head)")
            }

            let id = try await client.postPin(as: student, mapString: "Two Doors")
            for (minor, connection, _) in streams {
                let received = try await connection.receive(until: "\"objectId\":\"\(id)\"")
                #expect(received.contains(": connected\n\n"), "HTTP/1.\(minor): \(received)")
                #expect(received.contains("event: LocationPosted\ndata: {"), "HTTP/1.\(minor): \(received)")
                #expect(received.contains("\"mapString\":\"Two Doors\""), "HTTP/1.\(minor): \(received)")
            }
        }
    }
}
