import Foundation
import HTTPTypes
import HummingbirdTesting
import ServiceKit
import TestSupport
import Testing

@testable import AuthGateway
@testable import ServiceTwins

/// One student, or one script with a session, cannot flood the map: past `WRITE_BURST` writes at once,
/// the next waits for `WRITE_INTERVAL`, on every write route and path alias, from every replica. The tests
/// count a student's pins to show what was let through, so the cap on pins per student is raised for them.
@Suite struct WriteLimitTests {
    static let manyPins = 100

    static let idempotencyKey = HTTPField.Name("Idempotency-Key")!

    @Test func aStudentPostingAsFastAsTheyCanIsToldToWaitAndIsServedAgainAfterTheWait() async throws {
        let clock = ManualClock()
        try await withGatewayRouter(clock: clock, pinsPerStudent: Self.manyPins) { client, _ in
            let student = try await client.signedUpAndLoggedIn("eager@example.com")
            for _ in 0..<5 { _ = try await client.postPin(as: student) }
            let refused = try await client.send(.post, "/v1/StudentLocation", body: TestPin.json, headers: [student.bearer])
            #expect(refused.status == .tooManyRequests)
            #expect(refused.headers[.retryAfter] == "10")
            #expect(refused.body == #"{"code":155,"error":"Too many pins posted, changed or deleted in a short time; try again in 10 seconds."}"#)
            #expect(try await client.pins().count == 5, "the refused post appended nothing")

            // Every write route and path alias counts, and is refused alike.
            let pin = try #require(try await client.pins().first?["objectId"] as? String)
            for (method, path) in [
                (HTTPRequest.Method.post, "/parse/classes/StudentLocation"), (.post, "/1/classes/StudentLocation"),
                (.put, "/v1/StudentLocation/\(pin)"), (.delete, "/parse/classes/StudentLocation/\(pin)"),
            ] {
                let reply = try await client.send(method, path, body: TestPin.json, headers: [student.bearer])
                #expect(reply.status == .tooManyRequests, "\(method) \(path)")
            }

            clock.advance(by: .seconds(9))
            #expect(try await client.send(.post, "/v1/StudentLocation", body: TestPin.json, headers: [student.bearer]).headers[.retryAfter] == "1")
            clock.advance(by: .seconds(1))
            _ = try await client.postPin(as: student)
            #expect(try await client.send(.post, "/v1/StudentLocation", body: TestPin.json, headers: [student.bearer]).status == .tooManyRequests)
            // Another student is not held back by the first one's writes.
            _ = try await client.postPin(as: try await client.signedUpAndLoggedIn("patient@example.com"))
        }
    }

    @Test func aRetryOfAPostAlreadyMadeIsNotCountedAndIsAnsweredEvenPastTheLimit() async throws {
        try await withGatewayRouter(clock: ManualClock(), pinsPerStudent: Self.manyPins) { client, _ in
            let student = try await client.signedUpAndLoggedIn("retry@example.com")
            let keyed = [student.bearer, HTTPField(name: Self.idempotencyKey, value: "first-attempt")]
            let first = try await client.send(.post, "/v1/StudentLocation", body: TestPin.json, headers: keyed)
            #expect(first.status == .ok)
            for _ in 0..<3 {
                let retry = try await client.send(.post, "/v1/StudentLocation", body: TestPin.json, headers: keyed)
                #expect(retry.status == .ok)
                #expect(retry.json["objectId"] as? String == first.json["objectId"] as? String)
            }
            // The retries took nothing: four more posts make the burst of five.
            for _ in 0..<4 { _ = try await client.postPin(as: student) }
            #expect(try await client.send(.post, "/v1/StudentLocation", body: TestPin.json, headers: [student.bearer]).status == .tooManyRequests)
            // Past the limit, the retry still gets its answer; a post with a new key does not get through.
            let late = try await client.send(.post, "/v1/StudentLocation", body: TestPin.json, headers: keyed)
            #expect(late.status == .ok)
            #expect(late.json["objectId"] as? String == first.json["objectId"] as? String)
            let fresh = try await client.send(
                .post, "/v1/StudentLocation", body: TestPin.json, headers: [student.bearer, HTTPField(name: Self.idempotencyKey, value: "new")])
            #expect(fresh.status == .tooManyRequests)
            #expect(fresh.headers[.retryAfter] == "10")
            #expect(try await client.pins().count == 5)
        }
    }

    @Test(arguments: GatewayStoresKind.allCases)
    func writesSentInParallelCannotOutrunTheLimit(_ stores: GatewayStoresKind) async throws {
        try await withGatewayRouter(over: stores, clock: ManualClock(), pinsPerStudent: Self.manyPins) { client, _ in
            let student = try await client.signedUpAndLoggedIn("parallel@example.com")
            let statuses = try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                for _ in 0..<20 {
                    group.addTask { try await client.send(.post, "/v1/StudentLocation", body: TestPin.json, headers: [student.bearer]).status }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses.filter { $0 == .ok }.count == 5, "\(statuses)")
            #expect(statuses.filter { $0 == .tooManyRequests }.count == 15, "\(statuses)")
            #expect(try await client.pins().count == 5)
        }
    }

    /// With a large burst a replica takes writes from the shared count several at a time (a lease), and asks
    /// the database once for many: still never more than the burst in all.
    @Test func writesTakenSeveralAtATimeNeverAddUpToMoreThanTheBurst() async throws {
        try await withGatewayRouter(over: .postgres, clock: ManualClock(), pinsPerStudent: 1_000, configure: { $0.writeLimit.burst = 320 }) {
            client, _ in
            let student = try await client.signedUpAndLoggedIn("lease@example.com")
            let statuses = try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                for _ in 0..<400 {
                    group.addTask { try await client.send(.post, "/v1/StudentLocation", body: TestPin.json, headers: [student.bearer]).status }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            let letThrough = statuses.filter { $0 == .ok }.count
            #expect(letThrough <= 320, "\(letThrough) let through")
            #expect(letThrough > 250, "\(letThrough) let through: writes counted but never let through")
            #expect(statuses.filter { $0 == .tooManyRequests }.count == 400 - letThrough)
            #expect(try await client.pins().count == min(letThrough, 100), "the list shows the newest 100")
        }
    }

    @Test func aClientAddressHasFourStudentsWorthOfWrites() async throws {
        // A classroom behind a proxy the gateway trusts: its students' addresses come from X-Forwarded-For.
        try await withGatewayRouter(
            clock: ManualClock(), peer: "198.51.100.7", configure: { $0.limits.trustedProxies = TrustedProxies("198.51.100.7")! }
        ) {
            client, _ in
            let classroom = HTTPField(name: HTTPField.Name("X-Forwarded-For")!, value: "203.0.113.20")
            for index in 0..<4 {
                let student = try await client.signedUpAndLoggedIn("class\(index)@example.com")
                for _ in 0..<5 {
                    #expect(
                        try await client.send(.post, "/v1/StudentLocation", body: TestPin.json, headers: [classroom, student.bearer]).status == .ok)
                }
            }
            let fifth = try await client.signedUpAndLoggedIn("class4@example.com")
            let refused = try await client.send(.post, "/v1/StudentLocation", body: TestPin.json, headers: [classroom, fifth.bearer])
            #expect(refused.status == .tooManyRequests)
            // One write per interval / 4 for the address: 10 s / 4 = 2.5 s, told in whole seconds.
            #expect(refused.headers[.retryAfter] == "3")
            // The same student from another address is not held back by the classroom's.
            let elsewhere = HTTPField(name: HTTPField.Name("X-Forwarded-For")!, value: "203.0.113.99")
            #expect(try await client.send(.post, "/v1/StudentLocation", body: TestPin.json, headers: [elsewhere, fifth.bearer]).status == .ok)
        }
    }

    @Test func twoReplicasTogetherLetThroughNoMoreThanTheLimit() async throws {
        try await withGateway { first, fixture in
            let student = try await first.signedUpAndLoggedIn("replicas@example.com")
            try await withSecondReplica(of: fixture) { second in
                let statuses = try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                    for index in 0..<16 {
                        let replica = index.isMultiple(of: 2) ? first : second
                        group.addTask { try await replica.send(.post, "/v1/StudentLocation", body: TestPin.json, headers: [student.bearer]).status }
                    }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
                #expect(statuses.filter { $0 == .ok }.count == 5, "\(statuses)")
                #expect(statuses.filter { $0 == .tooManyRequests }.count == 11, "\(statuses)")
            }
        }
    }

    @Test func theLimitIsConfiguredAndABadValueIsRefusedAtStartUp() throws {
        let base = [
            "DATABASE_URL": "postgres://u@127.0.0.1:5432/d", "LOCATIONS_URL": "http://127.0.0.1:8081", "INTERNAL_TOKEN": TestDatabase.internalToken,
        ]
        let configured = try GatewayConfiguration.fromEnvironment(base.merging(["WRITE_BURST": "50", "WRITE_INTERVAL": "2m"]) { $1 })
        #expect(configured.writeLimit == WriteLimit.Policy(burst: 50, interval: .seconds(120)))
        #expect(try GatewayConfiguration.fromEnvironment(base).writeLimit == WriteLimit.Policy(burst: 5, interval: .seconds(10)))
        #expect(throws: ConfigurationError.self) { try GatewayConfiguration.fromEnvironment(base.merging(["WRITE_BURST": "0"]) { $1 }) }
        do {
            _ = try GatewayConfiguration.fromEnvironment(base.merging(["WRITE_INTERVAL": "soon"]) { $1 })
            Issue.record("WRITE_INTERVAL=soon was taken")
        } catch {
            #expect("\(error)".contains("WRITE_INTERVAL must be a positive duration"), "\(error)")
        }
    }
}
