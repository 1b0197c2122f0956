import Foundation
import HTTPTypes
import HummingbirdTesting
import PostgresNIO
import ServiceKit
import TestSupport
import Testing

@testable import AuthGateway

extension TimedGatewayTests {
    /// The gateway's own database away (a relay between them cut, as a crash would): whatever needs it is
    /// answered 503 with `Retry-After` within the query deadline, in the route's own error shape, never 500;
    /// what does not need it keeps working; and service returns by itself when the database does.
    @Suite struct DatabaseOutageTests {
        static let unavailable = "The database is unavailable; try again shortly."

        /// A gateway whose database connections pass through a relay the test can cut; locations-service
        /// reaches the database directly.
        private func withGatewayBehindRelay(
            _ body: @escaping @Sendable (any TestClientProtocol, TestDatabase, TCPProxy) async throws -> Void
        ) async throws {
            let database = try await TestDatabase.create()
            let target = try #require(URLComponents(string: database.url))
            let proxy = TCPProxy(upstreamHost: try #require(target.host), upstreamPort: try #require(target.port))
            try await proxy.start()
            var relayed = target
            relayed.port = proxy.port
            let url = try #require(relayed.string)
            try await withGateway(database: database, configure: { $0.database = try! DatabaseURL(url) }) { client, _ in
                try await body(client, database, proxy)
            }
            await proxy.cut()
        }

        @Test func withTheDatabaseAwayEveryRouteThatNeedsItIsAQuick503AndServiceReturnsByItself() async throws {
            try await withGatewayBehindRelay { client, _, proxy in
                let writer = try await client.signedUpAndLoggedIn("writer@example.com")
                let pin = try await client.postPin(as: writer)
                // Logged in, never seen by this replica's session cache: its writes need the sessions table.
                let unseen = try await client.signedUpAndLoggedIn("unseen@example.com")
                await proxy.cut()

                let parseStyle = #"{"code":100,"error":"\#(Self.unavailable)"}"#
                let sessionStyle = #"{"status":503,"error":"\#(Self.unavailable)"}"#
                let requests: [(HTTPRequest.Method, String, String?, [HTTPField], String)] = [
                    (.post, "/v1/StudentLocation", TestPin.json, [unseen.bearer], parseStyle),
                    (.put, "/v1/StudentLocation/\(pin)", TestPin.json, [unseen.bearer], parseStyle),
                    (.delete, "/v1/StudentLocation/\(pin)", nil, [unseen.bearer], parseStyle),
                    (
                        .post, "/v1/session", #"{"udacity":{"username":"writer@example.com","password":"\#(writer.password)"}}"#, [],
                        ")]}'\n" + sessionStyle
                    ),
                    (.get, "/v1/users/\(writer.key)", nil, [unseen.bearer], ")]}'\n" + sessionStyle),
                    (
                        .post, "/v1/accounts", #"{"email":"new@example.com","password":"long enough","firstName":"N","lastName":"N"}"#, [],
                        sessionStyle
                    ),
                ]
                for (method, path, body, headers, expected) in requests {
                    let started = ContinuousClock.now
                    let reply = try await client.send(method, path, body: body, headers: headers)
                    let took = ContinuousClock.now - started
                    #expect(reply.status == .serviceUnavailable, "\(method) \(path): \(reply.status) \(reply.body)")
                    #expect(reply.body == expected, "\(method) \(path)")
                    #expect(reply.headers[.retryAfter] == "1", "\(method) \(path)")
                    #expect(took < .milliseconds(2_500), "\(method) \(path) took \(took)")
                }
                // Reading pins needs only locations-service, which still reaches its database.
                #expect(try await client.send(.get, "/v1/StudentLocation").status == .ok)

                try await proxy.start()
                let back = try await waitFor(within: .seconds(5), every: .milliseconds(100)) {
                    try await client.send(.post, "/v1/StudentLocation", body: TestPin.json, headers: [unseen.bearer]).status == .ok
                }
                #expect(back != nil, "writes did not come back within 5 s of the database")
                #expect(
                    try await client.send(
                        .post, "/v1/session", body: #"{"udacity":{"username":"writer@example.com","password":"\#(writer.password)"}}"#
                    )
                    .status == .ok)
            }
        }

        @Test func sessionsAReplicaHoldsKeepWorkingThroughTheOutageAndOnesRevokedMeanwhileEndWhenItIsBack() async throws {
            try await withGatewayBehindRelay { client, database, proxy in
                let kept = try await client.signedUpAndLoggedIn("kept@example.com")
                let revoked = try await client.signedUpAndLoggedIn("revoked@example.com")
                _ = try await client.postPin(as: kept)
                _ = try await client.postPin(as: revoked)
                #expect(try await waitForGauge("onthemap_session_listener_up", 1, client, within: .seconds(5)) != nil, "the replica never listened")
                await proxy.cut()
                #expect(try await waitForGauge("onthemap_session_listener_up", 0, client, within: .seconds(5)) != nil, "the replica never noticed")

                // Served from the cache: locations-service, which holds the pins, still reaches its database.
                #expect(try await client.send(.post, "/v1/StudentLocation", body: TestPin.json, headers: [kept.bearer]).status == .ok)
                // Ended elsewhere while this replica hears nothing (another replica's logout, straight in the table).
                _ = try await withPostgresClient(try database.databaseURL, logger: TestDatabase.logger) { client in
                    try await client.query(
                        "UPDATE auth.sessions SET revoked_at = now() WHERE account_key = \(revoked.key)", logger: TestDatabase.logger)
                }

                try await proxy.start()
                let ended = try await waitFor(within: .seconds(5), every: .milliseconds(100)) {
                    try await client.send(.post, "/v1/StudentLocation", body: TestPin.json, headers: [revoked.bearer]).status == .unauthorized
                }
                #expect(ended != nil, "a session revoked during the outage still writes 5 s after the database came back")
                #expect(try await client.send(.post, "/v1/StudentLocation", body: TestPin.json, headers: [kept.bearer]).status == .ok)
            }
        }
    }
}
