import Foundation
import OnTheMapClient
import OnTheMapShared
import TestSupport
import Testing

/// Each of the library's errors, produced by a real answer of the gateway's router in memory, of the gateway
/// on a socket with the service behind it stopped, or by no answer at all.
@Suite(.serialized) struct TypedErrorTests {
    @Test func nothingListeningIsUnreachableWithinTwoSeconds() async throws {
        let gateway = deadGatewayURL()
        let started = ContinuousClock.now
        let error = await thrownError { try await OnTheMapClient(gateway: gateway).list() }
        #expect(error == .unreachable(gateway: gateway, reason: "connection refused"))
        #expect(ContinuousClock.now - started < .seconds(2))
    }

    @Test func aWrongPasswordIsWrongCredentialsAndRepeatedGuessesAreThrottledWithTheWait() async throws {
        try await MemorySystem.with { system in
            _ = try await system.student("ada@example.com")
            let client = system.client()
            #expect(await thrownError { try await client.logIn(email: "ada@example.com", password: "not my password") } == .wrongCredentials)
            #expect(await thrownError { try await client.logIn(email: "nobody@example.com", password: "whatever it is") } == .wrongCredentials)
            for _ in 0..<4 { _ = await thrownError { try await client.logIn(email: "ada@example.com", password: "still wrong") } }
            let throttled = await thrownError { try await client.logIn(email: "ada@example.com", password: "correct horse battery") }
            guard case .throttled(let seconds, _) = throttled else {
                Issue.record("expected throttled, got \(String(describing: throttled))")
                return
            }
            #expect((seconds ?? 0) > 60)
            #expect(throttled?.description.hasPrefix("too many attempts; try again in ") == true)
        }
    }

    @Test func anEndedSessionIsNotLoggedIn() async throws {
        try await MemorySystem.with { system in
            let ada = try await system.student("ada@example.com")
            #expect(try await ada.me().fullName == "Ada Lovelace")
            try await ada.logOut()
            #expect(await thrownError { try await ada.me() } == .notLoggedIn(message: "your session has ended"))
            let posted = await thrownError { try await ada.postPin("Berlin") }
            guard case .notLoggedIn = posted else {
                Issue.record("expected notLoggedIn, got \(String(describing: posted))")
                return
            }
        }
    }

    @Test func anotherStudentsPinIsNotYours() async throws {
        try await MemorySystem.with { system in
            let ada = try await system.student("ada@example.com")
            let grace = try await system.student("grace@example.com", firstName: "Grace", lastName: "Hopper")
            let id = try await ada.postPin("Berlin")
            guard case .notYours = await thrownError({ try await grace.delete(id) }) else {
                Issue.record("expected notYours")
                return
            }
            guard case .notYours = await thrownError({ try await grace.update(id, LocationInput(mapString: "Paris")) }) else {
                Issue.record("expected notYours")
                return
            }
            #expect(try await ada.location(id).mapString == "Berlin")
        }
    }

    @Test func refusedInputCarriesTheGatewaysMessage() async throws {
        try await MemorySystem.with { system in
            let ada = try await system.student("ada@example.com")
            let link = await thrownError { try await ada.postPin("Berlin", link: "javascript:alert(1)") }
            guard case .refused(let message, _) = link else {
                Issue.record("expected refused, got \(String(describing: link))")
                return
            }
            #expect(message.contains("mediaURL"))
            let short = await thrownError {
                try await system.client().signUp(email: "short@example.com", password: "short", firstName: "A", lastName: "B")
            }
            #expect(short == .refused(message: "password must be at least 8 characters.", parameter: "password"))
        }
    }

    @Test func anUnknownPinOrPlaceIsNotFound() async throws {
        try await MemorySystem.with { system in
            let ada = try await system.student("ada@example.com")
            #expect(await thrownError { try await ada.delete(ObjectID("AAAAAAAAAA")) } == .notFound(message: "Object not found."))
            guard case .notFound = await thrownError({ try await ada.geocode("Qqqxxzzy Nowhere") }) else {
                Issue.record("expected notFound")
                return
            }
        }
    }

    @Test func aServiceDownBehindTheGatewayIsAServerFault() async throws {
        try await StoppableSystem.with { system in
            system.stopService()
            let client = system.client()
            // The gateway's cached list may answer once more; a filtered list always asks the service.
            let error = await thrownError { try await client.list(.init(uniqueKey: "nobody")) }
            guard case .serverFault(let status, _) = error else {
                Issue.record("expected serverFault, got \(String(describing: error))")
                return
            }
            #expect(status == 503)
        }
    }
}
