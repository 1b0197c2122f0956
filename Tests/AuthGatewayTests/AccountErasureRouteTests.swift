import Foundation
import HTTPTypes
import HummingbirdTesting
import OnTheMapShared
import ServiceKit
import TestSupport
import Testing

@testable import AuthGateway
@testable import ServiceTwins

/// `DELETE /v1/accounts/me` at the gateway's router: who may ask, and what the asker sees.
@Suite struct AccountErasureRouteTests {
    @Test(arguments: GatewayStoresKind.allCases)
    func anErasureAnswersWhatWasErasedEndsTheSessionAndTheAccountCannotLogInAgain(over stores: GatewayStoresKind) async throws {
        try await withGatewayRouter(over: stores) { client, _ in
            let other = try await client.signedUpAndLoggedIn("other@example.com", firstName: "Olive")
            let gone = try await client.signedUpAndLoggedIn("gone@example.com", firstName: "Zephyrine")
            _ = try await client.postPin(as: other, mapString: "Lima, Peru")
            for place in ["Oslo, Norway", "Quito, Ecuador"] { _ = try await client.postPin(as: gone, mapString: place) }

            let reply = try await client.send(.delete, "/v1/accounts/me", headers: [gone.bearer])
            #expect(reply.status == .ok)
            #expect(reply.body == #"{"erased":{"key":"\#(gone.key)","pins":2}}"#)
            let cleared = reply.headers[values: .setCookie]
            for name in ["onthemap_session", "XSRF-TOKEN"] {
                #expect(cleared.contains { $0.hasPrefix("\(name)=;") && $0.contains("Max-Age=0") }, "\(cleared)")
            }
            #expect(try await client.pins().map { $0["mapString"] as? String } == ["Lima, Peru"])

            let login = try await client.send(
                .post, "/v1/session", body: #"{"udacity":{"username":"gone@example.com","password":"\#(gone.password)"}}"#)
            #expect(login.status == .forbidden)
            let again = try await client.send(.delete, "/v1/accounts/me", headers: [gone.bearer])
            #expect(again.status == .unauthorized)
            #expect(again.body == #"{"status":401,"error":"Log in to erase your account."}"#)
            #expect(try await client.send(.get, "/v1/users/\(gone.key)", headers: [other.bearer]).status == .notFound)
            // Signing up again with the address is a new account, with nothing of the old one.
            let back = try await client.signedUpAndLoggedIn("gone@example.com", firstName: "Zephyrine")
            #expect(back.key != gone.key)
        }
    }

    @Test func anErasureIsInTheRestoreLedgerWithTheKeyAndTheTimeAlone() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("ledger-\(UUID().uuidString).jsonl").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try await withGatewayRouter(configure: { $0.restoreLedger = RestoreLedger(path: path) }) { client, _ in
            let gone = try await client.signedUpAndLoggedIn("ledger@example.com", firstName: "Wilhelmina")
            _ = try await client.postPin(as: gone, mapString: "Oslo, Norway")
            #expect(try await client.send(.delete, "/v1/accounts/me", headers: [gone.bearer]).status == .ok)

            let records = try RestoreLedger(path: path).records(since: .distantPast)
            #expect(records.map(\.kind) == [.erased])
            #expect(records.first?.account == gone.key)
            let line = try String(contentsOfFile: path, encoding: .utf8)
            for kept in ["ledger@example.com", "Wilhelmina", "Oslo"] { #expect(!line.contains(kept), "\(line)") }
        }
    }

    @Test func anotherSitesPageOrAPageWithoutTheXSRFTokenCannotErase() async throws {
        try await withGatewayRouter { client, _ in
            let student = try await client.signedUpAndLoggedIn("kept@example.com")
            _ = try await client.postPin(as: student)
            let crossSite = try await client.send(
                .delete, "/v1/accounts/me", headers: [student.bearer, HTTPField(name: .origin, value: "https://evil.example")])
            #expect(crossSite.status == .forbidden)
            #expect(crossSite.body == #"{"status":403,"error":"Writes from another site's pages are not allowed."}"#)
            let withoutToken = try await client.send(
                .delete, "/v1/accounts/me", headers: [student.bearer, HTTPField(name: HTTPField.Name("Sec-Fetch-Site")!, value: "same-origin")])
            #expect(withoutToken.status == .forbidden)
            #expect(withoutToken.body.contains("X-XSRF-TOKEN"))
            #expect(try await client.pins().count == 1, "nothing erased")
            #expect(try await client.send(.get, "/v1/users/me", headers: [student.bearer]).status == .ok, "still logged in")
        }
    }
}
