import Foundation
import HTTPTypes
import HummingbirdTesting
import OnTheMapShared
import ServiceKit
import TestSupport
import Testing

@testable import AuthGateway
@testable import ServiceTwins

/// Nobody writes as someone else, with a dead session, from another site, or by guessing passwords.
@Suite struct SecurityTests {

    @Test(arguments: GatewayStoresKind.allCases)
    func writesWithoutALiveSessionAre401(_ stores: GatewayStoresKind) async throws {
        let clock = ManualClock()
        try await withGatewayRouter(over: stores, clock: clock, configure: { $0.sessionLifetime = .seconds(1) }) { client, _ in
            let none = try await client.send(.post, "/v1/StudentLocation", body: TestPin.json)
            #expect(none.status == .unauthorized)
            #expect(none.json["code"] as? Int == 209)
            let forged = try await client.send(
                .post, "/v1/StudentLocation", body: TestPin.json,
                headers: [HTTPField(name: .authorization, value: "Bearer 1700000000S" + String(repeating: "ab", count: 32))])
            #expect(forged.status == .unauthorized)
            let student = try await client.signedUpAndLoggedIn("expiring@example.com")
            #expect(try await client.send(.post, "/v1/StudentLocation", body: TestPin.json, headers: [student.bearer]).status == .ok)
            clock.advance(by: .milliseconds(999))
            #expect(try await client.send(.post, "/v1/StudentLocation", body: TestPin.json, headers: [student.bearer]).status == .ok)
            clock.advance(by: .milliseconds(1))
            let expired = try await client.send(.post, "/v1/StudentLocation", body: TestPin.json, headers: [student.bearer])
            #expect(expired.status == .unauthorized)
        }
    }

    @Test func nobodyPostsAsOrEditsSomeoneElse() async throws {
        try await withGatewayRouter { client, _ in
            let owner = try await client.signedUpAndLoggedIn("owner@example.com")
            let intruder = try await client.signedUpAndLoggedIn("intruder@example.com", firstName: "Mallory", lastName: "Evil")
            let id = try await client.postPin(as: owner)
            let claimed = try await client.send(
                .post, "/v1/StudentLocation",
                body: """
                    {"uniqueKey":"\(owner.key)","firstName":"Jarrod","lastName":"Parkes","mapString":"Fake","mediaURL":"https://evil.example","latitude":1,"longitude":1}
                    """, headers: [intruder.bearer])
            let claimedId = try #require(claimed.json["objectId"] as? String)
            let fake = try await client.send(.get, "/v1/StudentLocation/\(claimedId)")
            #expect(fake.json["uniqueKey"] as? String == intruder.key)
            #expect(fake.json["firstName"] as? String == "Mallory")

            let edit = try await client.send(.put, "/v1/StudentLocation/\(id)", body: #"{"mapString":"Hijacked"}"#, headers: [intruder.bearer])
            #expect(edit.status == .forbidden)
            #expect(edit.json["code"] as? Int == 119)
            let delete = try await client.send(.delete, "/v1/StudentLocation/\(id)", headers: [intruder.bearer])
            #expect(delete.status == .forbidden)
            #expect(try await client.send(.get, "/v1/StudentLocation/\(id)").json["mapString"] as? String == "Mountain View, CA")
        }
    }

    @Test func browserWritesFromAnotherSiteAreRefused() async throws {
        try await withGatewayRouter { client, _ in
            let student = try await client.signedUpAndLoggedIn("browser@example.com")
            let evil = try await client.send(
                .post, "/v1/StudentLocation", body: TestPin.json,
                headers: [student.bearer, HTTPField(name: .init("Origin")!, value: "https://evil.example")])
            #expect(evil.status == .forbidden)
            #expect(evil.body == #"{"code":119,"error":"Writes from another site's pages are not allowed."}"#)
            let fetchSite = try await client.send(
                .post, "/v1/StudentLocation", body: TestPin.json,
                headers: [student.bearer, HTTPField(name: .init("Sec-Fetch-Site")!, value: "cross-site")])
            #expect(fetchSite.status == .forbidden)
            let sameSite = try await client.send(
                .post, "/v1/StudentLocation", body: TestPin.json,
                headers: [
                    student.bearer, HTTPField(name: .init("Origin")!, value: "http://localhost"),
                    HTTPField(name: .init("Sec-Fetch-Site")!, value: "same-origin"),
                ])
            #expect(sameSite.status == .ok, "\(sameSite.body)")
        }
    }

    @Test func javascriptLinksAreNeverStored() async throws {
        try await withGatewayRouter { client, _ in
            let student = try await client.signedUpAndLoggedIn("js@example.com")
            let reply = try await client.send(
                .post, "/v1/StudentLocation",
                body: """
                    {"mapString":"Berlin","mediaURL":"javascript:alert(document.cookie)","latitude":52.5,"longitude":13.4}
                    """, headers: [student.bearer])
            #expect(reply.status == .badRequest)
            #expect(reply.json["code"] as? Int == 142)
            #expect((try await client.send(.get, "/v1/StudentLocation").json["results"] as? [Any])?.isEmpty == true)
        }
    }

    @Test(arguments: GatewayStoresKind.allCases)
    func repeatedFailuresAreThrottledEvenTheRightPasswordWaitsAndTheAccountOpensOnceTheyAgeOut(_ stores: GatewayStoresKind) async throws {
        let clock = ManualClock()
        try await withGatewayRouter(over: stores, clock: clock) { client, _ in
            let student = try await client.signUp(Student("guess@example.com"))
            let guess = #"{"udacity":{"username":"guess@example.com","password":"nope"}}"#
            let right = #"{"udacity":{"username":"\#(student.email)","password":"\#(student.password)"}}"#
            for _ in 0..<5 {
                #expect(try await client.send(.post, "/v1/session", body: guess).status == .forbidden)
            }
            let throttled = try await client.send(.post, "/v1/session", body: guess)
            #expect(throttled.status == .tooManyRequests)
            // The clock stands still: all five failures are exactly as old as the 15-minute window is long.
            #expect(throttled.headers[.retryAfter] == "900")
            #expect(throttled.body == ")]}'\n{\"status\":429,\"error\":\"Too many failed logins; try again in 900 seconds.\"}")
            #expect(try await client.send(.post, "/v1/session", body: right).status == .tooManyRequests)

            clock.advance(by: .seconds(899))
            let lastSecond = try await client.send(.post, "/v1/session", body: right)
            #expect(lastSecond.status == .tooManyRequests)
            #expect(lastSecond.headers[.retryAfter] == "1")
            clock.advance(by: .seconds(1))
            #expect(try await client.send(.post, "/v1/session", body: right).status == .ok)
        }
    }

    @Test func manyAccountsGuessedFromOneAddressAreThrottledToo() async throws {
        try await withGatewayRouter(configure: { $0.throttle.failuresPerAddress = 4 }) { client, _ in
            for index in 0..<4 {
                let wrong = try await client.send(
                    .post, "/v1/session", body: #"{"udacity":{"username":"user\#(index)@example.com","password":"nope"}}"#)
                #expect(wrong.status == .forbidden)
            }
            let fifth = try await client.send(.post, "/v1/session", body: #"{"udacity":{"username":"fresh@example.com","password":"nope"}}"#)
            #expect(fifth.status == .tooManyRequests)
        }
    }

    @Test func locationsServiceRefusesCallersWithoutTheInternalToken() async throws {
        try await withGateway { _, fixture in
            let (status, body) = try await fixture.locations.request(
                "POST", "/v1/StudentLocation", body: TestPin.json,
                headers: [InternalHeaders.actor: Actor(key: "1", firstName: "A", lastName: "B").headerValue],
                token: false)
            #expect(status == 401)
            #expect(body.contains("\"code\":209"))
        }
    }
}
