import Foundation
import HTTPTypes
import HummingbirdTesting
import TestSupport
import Testing

@testable import AuthGateway
@testable import ServiceTwins

/// Most writes are answered before the router (keep-alive HTTP/1.1); the rest (HTTP/1.0, a connection
/// that closes after the answer, `Expect: 100-continue`) go through it. A client cannot tell which.
@Suite struct WriteDoorsTests {
    @Test func aPostAndItsEditAnswerAlikeThroughEitherDoor() async throws {
        // One student writes through every framing, more writes than the write limit lets through at once.
        try await withGatewaySocket(configure: { $0.writeLimit.burst = 1_000 }) { client, _ in
            let port = try #require(client.port)
            let student = try await client.signedUpAndLoggedIn("doors@example.com")
            for framing in Framing.allCases {
                let bearer = "Authorization: Bearer \(student.token)"
                let before = try await answeredByDoor(client)
                let posted = try await rawExchange(
                    framing, "POST", "/v1/StudentLocation", body: TestPin.json, headers: [bearer, "X-Request-ID: door-\(framing)"], port: port)
                let after = try await answeredByDoor(client)
                // The first read of /metrics is one more answer through the router.
                let (prepared, routed) = framing == .keepAlive ? (1, 1) : (0, 2)
                #expect(after["prepared", default: 0] - before["prepared", default: 0] == prepared, "\(framing): \(before) → \(after)")
                #expect(after["router", default: 0] - before["router", default: 0] == routed, "\(framing): \(before) → \(after)")
                #expect(posted.status.hasSuffix(" 200 OK"), "\(framing): \(posted.status)")
                #expect(posted.headers["content-type"] == "application/json", "\(framing)")
                #expect(posted.headers["x-request-id"] == "door-\(framing)", "\(framing)")
                let json = try #require(try JSONSerialization.jsonObject(with: Data(posted.body.utf8)) as? [String: Any])
                let id = try #require(json["objectId"] as? String)
                let createdAt = try #require(json["createdAt"] as? String, "\(framing)")
                #expect(json["createAt"] as? String == createdAt, "\(framing)")

                let legacy = try await rawExchange(
                    framing, "POST", "/parse/classes/StudentLocation", body: TestPin.json, headers: [bearer], port: port)
                #expect(legacy.status.hasSuffix(" 201 Created"), "\(framing): \(legacy.status)")

                let edited = try await rawExchange(framing, "PUT", "/v1/StudentLocation/\(id)", body: TestPin.json, headers: [bearer], port: port)
                #expect(edited.status.hasSuffix(" 200 OK"), "\(framing): \(edited.status)")
                #expect(edited.body.contains(#""updatedAt":"#) && edited.body.contains(#""objectId":"\#(id)""#), "\(framing)")

                let deleted = try await rawExchange(framing, "DELETE", "/v1/StudentLocation/\(id)", body: "", headers: [bearer], port: port)
                #expect(deleted.status.hasSuffix(" 200 OK") && deleted.body == "{}", "\(framing): \(deleted.status) \(deleted.body)")
                let gone = try await client.send(.get, "/v1/StudentLocation/\(id)")
                #expect(gone.status == .notFound, "\(framing)")
            }
        }
    }

    @Test func refusalsAreTheSameParseErrorsThroughEitherDoor() async throws {
        try await withGatewaySocket { client, _ in
            let port = try #require(client.port)
            let student = try await client.signedUpAndLoggedIn("refused@example.com")
            let bearer = "Authorization: Bearer \(student.token)"
            let tooLarge = #"{"mapString":""# + String(repeating: "x", count: 17 * 1024) + #""}"#
            let cases: [(body: String, headers: [String], status: String, answer: String)] = [
                (TestPin.json, [], "401 Unauthorized", #"{"code":209,"error":"Log in to post, change or delete a pin."}"#),
                (
                    TestPin.json, ["Authorization: Bearer 1234567890Sforged"], "401 Unauthorized",
                    #"{"code":209,"error":"Log in to post, change or delete a pin."}"#
                ),
                (
                    TestPin.json, [bearer, "Origin: https://evil.example"], "403 Forbidden",
                    #"{"code":119,"error":"Writes from another site's pages are not allowed."}"#
                ),
                (tooLarge, [bearer], "413 Payload Too Large", #"{"code":142,"error":"The request body is larger than 16 KiB."}"#),
                // Who may write is settled before the body's size.
                (tooLarge, [], "401 Unauthorized", #"{"code":209,"error":"Log in to post, change or delete a pin."}"#),
            ]
            for framing in Framing.allCases {
                for refused in cases {
                    let answer = try await rawExchange(
                        framing, "POST", "/v1/StudentLocation", body: refused.body, headers: refused.headers, port: port)
                    #expect(answer.status.hasSuffix(refused.status), "\(framing): \(answer.status)")
                    #expect(answer.body == refused.answer, "\(framing): \(answer.body)")
                    #expect(answer.headers["content-type"] == "application/json", "\(framing)")
                }
            }
        }
    }
}
