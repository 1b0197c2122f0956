import Testing

@testable import ServiceKit

/// When a connection has to go, decided without a socket: each tick stands for one second here.
@Suite struct ConnectionGuardStateTests {
    static func state(header: Int = 3, body: Int = 5, idle: Int = 10) -> ConnectionGuardState {
        var limits = ConnectionLimits()
        limits.tick = .seconds(1)
        limits.headerTimeout = .seconds(header)
        limits.bodyTimeout = .seconds(body)
        limits.idleTimeout = .seconds(idle)
        return ConnectionGuardState(limits: limits)
    }

    /// Ticks until an action other than `.none`, at most `limit`; the tick it came on, and the action.
    static func run(
        _ state: inout ConnectionGuardState, ticks limit: Int, each: (inout ConnectionGuardState) -> Void = { _ in }
    )
        -> (tick: Int, action: ConnectionGuardState.Action)?
    {
        for tick in 1...limit {
            each(&state)
            let action = state.tick()
            if action != .none { return (tick, action) }
        }
        return nil
    }

    @Test func aHeadSentOneByteAtATimeIsCutOffAtTheHeaderTimeoutThoughBytesKeepComing() {
        var state = Self.state(header: 3)
        state.readComplete()
        #expect(state.phase == .readingHead(ticks: 0))
        // A byte arrives every tick, so the connection is never idle: only the header clock can end it.
        let ended = Self.run(&state, ticks: 20) { $0.readComplete() }
        #expect(ended?.tick == 3)
        #expect(ended?.action == .close(.headerTimeout))
    }

    @Test func aSlowBodyIsCutOffAtTheBodyTimeout() {
        var state = Self.state(body: 5)
        state.read(.head)
        state.readComplete()
        let ended = Self.run(&state, ticks: 20) { state in
            state.read(.body)
            state.readComplete()
        }
        #expect(ended?.tick == 5)
        #expect(ended?.action == .close(.bodyTimeout))
    }

    @Test func aWholeRequestInOneReadStartsNoHeaderClock() {
        var state = Self.state(header: 2, idle: 10)
        state.read(.head)
        state.read(.end)
        state.readComplete()
        #expect(state.phase == .betweenRequests)
        let ended = Self.run(&state, ticks: 20)
        #expect(ended?.action == .close(.idle), "only idleness ends a connection between requests")
        // The read counts as activity on the first tick; ten quiet ticks follow.
        #expect(ended?.tick == 11)
    }

    @Test func trafficEitherWayKeepsAConnectionOpen() {
        var state = Self.state(idle: 3)
        // A live stream: one request, then a heartbeat written every other tick for a long while.
        state.read(.head)
        state.read(.end)
        state.readComplete()
        state.wroteHead()
        var tick = 0
        let ended = Self.run(&state, ticks: 100) { state in
            tick += 1
            if tick.isMultiple(of: 2) { state.wroteBody() }
        }
        #expect(ended == nil)
    }

    @Test func aQuietConnectionClosesAtTheIdleTimeout() {
        var state = Self.state(idle: 4)
        let ended = Self.run(&state, ticks: 20)
        #expect(ended?.tick == 4)
        #expect(ended?.action == .close(.idle))
    }

    @Test func aClientThatLeavesDuringAStreamedAnswerIsLetGoAtOnce() {
        var state = Self.state()
        state.read(.head)
        state.read(.end)
        state.readComplete()
        state.wroteHead()
        #expect(state.inputClosed() == .close(.clientLeft))
    }

    @Test func aClientThatShutsItsSideAfterAskingStillGetsItsAnswer() {
        var state = Self.state()
        state.read(.head)
        state.read(.end)
        state.readComplete()
        #expect(state.inputClosed() == .none)
        state.wroteHead()
        state.wroteEnd()
        #expect(state.inputClosed() == .none)
    }
}
