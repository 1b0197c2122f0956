import OnTheMapClient
import OnTheMapShared
import TestSupport
import Testing

/// `eraseAccount()`: the student leaves the present and the past (against the gateway's router in memory),
/// and a pending erasure (against the gateway on a socket, the service behind it stopped).
@Suite(.serialized) struct EraseAccountCallTests {
    @Test func erasingAnAccountTakesItsPinsOutOfThePastAndEndsTheSession() async throws {
        try await MemorySystem.with { system in
            let past = try await KnownPast.make(system)
            let ada = past.ada
            let key = try #require(ada.session?.accountKey)
            let current = try await ada.postPin("Oslo, Norway")

            let erased = try await ada.eraseAccount()
            #expect(erased == ErasedAccount(key: key, pins: 2, pending: false))
            let anonymous = system.client()
            #expect(try await anonymous.list().map(\.objectId) == [past.lima])
            #expect(try await anonymous.list(.init(at: Moment(past.whileInBerlin))).map(\.objectId) == [past.lima])
            for pin in [past.pin, current] {
                #expect(await thrownError { try await anonymous.history(pin) } == .notFound(message: "Object not found."))
            }
            #expect(try await anonymous.history(past.lima).results.map(\.event) == [.posted], "another student's past stays")
            guard case .notLoggedIn = await thrownError({ try await ada.me() }) else {
                Issue.record("the session outlived the account")
                return
            }
            guard case .notLoggedIn = await thrownError({ try await ada.eraseAccount() }) else {
                Issue.record("an ended session erased again")
                return
            }
            #expect(await thrownError { try await anonymous.eraseAccount() } == .notLoggedIn(message: "not logged in"))
        }
    }

    @Test func anErasureTheServiceBehindCannotFinishYetIsPendingAndStillEndsTheSession() async throws {
        try await StoppableSystem.with { system in
            let ada = try await system.student("ada@example.com")
            _ = try await ada.postPin("Berlin, Germany")
            system.stopService()

            let erased = try await ada.eraseAccount()
            #expect(erased == ErasedAccount(key: try #require(ada.session?.accountKey), pins: nil, pending: true))
            guard case .notLoggedIn = await thrownError({ try await ada.me() }) else {
                Issue.record("the session outlived the erasure")
                return
            }
        }
    }
}
