import HTTPTypes
import HummingbirdTesting
import OnTheMapShared
import TestSupport
import Testing

@testable import LocationsService
@testable import ServiceTwins

/// Only the gateway may call the service, writes name their actor, and only owners change pins.
@Suite struct AuthorizationTests {
    @Test func everyRouteNeedsTheInternalToken() async throws {
        try await withRouter { client, _ in
            for (method, path) in [
                (HTTPRequest.Method.get, "/v1/StudentLocation"), (.get, "/v1/StudentLocation/abc"),
                (.post, "/v1/StudentLocation"), (.put, "/v1/StudentLocation/abc"), (.delete, "/v1/StudentLocation/abc"),
            ] {
                let reply = try await client.send(method, path, as: TestActors.jarrod, body: "{}", token: false)
                #expect(reply.status == .unauthorized, "\(method) \(path)")
                #expect(reply.json["code"] as? Int == 209)
            }
            let wrong = try await client.send(
                .get, "/v1/StudentLocation",
                headers: [HTTPField(name: .authorization, value: "Bearer not-the-token")], token: false)
            #expect(wrong.status == .unauthorized)
        }
    }

    /// The check itself: the whole header, byte for byte, and nothing that is merely close.
    @Test func theTokenIsAdmittedOnlyExactly() {
        let token = InternalToken("s3cret-token")
        #expect(token.admits(authorization: "Bearer s3cret-token"))
        for refused in [
            nil, "", "Bearer ", "Bearer s3cret-tokeN", "Bearer s3cret-token ", "bearer s3cret-token", "Bearer s3cret-tok", "s3cret-token",
        ] {
            #expect(!token.admits(authorization: refused), "\(refused ?? "nil")")
        }
        // A header of the right length whose bytes are not ASCII.
        #expect(!token.admits(authorization: "Bearer s3cret-tok\u{E9}"))
    }

    @Test func writesWithoutAValidActorAre401AndWriteNothing() async throws {
        try await withRouter { client, log in
            let missing = try await client.send(.post, "/v1/StudentLocation", body: TestPin.json)
            #expect(missing.status == .unauthorized)
            let garbled = try await client.send(
                .post, "/v1/StudentLocation", body: TestPin.json,
                headers: [HTTPField(name: HTTPField.Name(InternalHeaders.actor)!, value: "%%%")])
            #expect(garbled.status == .unauthorized)
            #expect(log.eventCount == 0)
        }
    }

    @Test func onlyTheOwnerMayUpdateOrDelete() async throws {
        try await withRouter { client, _ in
            let id = try await client.post(as: TestActors.jarrod)
            let update = try await client.send(.put, "/v1/StudentLocation/\(id)", as: TestActors.amara, body: #"{"mapString":"Lagos"}"#)
            #expect(update.status == .forbidden)
            #expect(update.json["code"] as? Int == 119)
            let delete = try await client.send(.delete, "/v1/StudentLocation/\(id)", as: TestActors.amara)
            #expect(delete.status == .forbidden)
            #expect(delete.json["code"] as? Int == 119)
            let pin = try await client.send(.get, "/v1/StudentLocation/\(id)")
            #expect(pin.json["mapString"] as? String == "Mountain View, CA")
        }
    }

    @Test func nonASCIINamesSurviveTheActorHeader() async throws {
        try await withRouter { client, _ in
            let id = try await client.post(as: TestActors.joao, mapString: "São Paulo, Brazil", latitude: -23.55, longitude: -46.63)
            let pin = try await client.send(.get, "/v1/StudentLocation/\(id)")
            #expect(pin.json["firstName"] as? String == "João")
            #expect(pin.json["lastName"] as? String == "Araújo")
            #expect(pin.json["mapString"] as? String == "São Paulo, Brazil")
        }
    }
}
