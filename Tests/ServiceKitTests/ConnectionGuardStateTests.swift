import TestSupport
import Testing

@testable import ServiceKit

/// When a connection has to go, decided without a socket, on a clock the test steps: the connection holds
/// its one wake-up as `ConnectionGuard` does, and each timeout is met to the instant.
@Suite struct ConnectionGuardStateTests {
    typealias State = ConnectionGuardState<SteppingClock>

    struct Connection {
        let clock = SteppingClock()
        var state: State
        /// The wake-up held, as the handler holds it.
        var wake: SteppingClock.Instant?
        var closed: State.Reason?

        init(header: Int = 3, body: Int = 5, idle: Int = 10) {
            var limits = ConnectionLimits()
            limits.headerTimeout = .seconds(header)
            limits.bodyTimeout = .seconds(body)
            limits.idleTimeout = .seconds(idle)
            state = State(limits: limits, clock: clock)
            perform(state.start())
        }

        mutating func perform(_ action: State.Action) {
            switch action {
            case .none: break
            case .wake(let deadline): wake = deadline
            case .close(let reason): closed = reason
            }
        }

        mutating func readComplete() { perform(state.readComplete()) }

        /// A whole request (head and end) in one read from the socket.
        mutating func readWholeRequest() {
            state.read(.head)
            state.read(.end)
            readComplete()
        }

        /// Moves time on for at most `limit`, doing `each` every `step` and waking the state when its
        /// wake-up comes; the reason and the time since the start, once it closes.
        mutating func run(
            for limit: Duration, step: Duration = .milliseconds(500), each: (inout Connection) -> Void = { _ in }
        ) -> (reason: State.Reason, after: Duration)? {
            let start = clock.now
            var nextStep = start.advanced(by: step)
            while clock.now < start.advanced(by: limit) {
                let next = min(wake ?? nextStep, nextStep)
                clock.advance(by: clock.now.duration(to: next))
                if let wake, wake <= clock.now {
                    self.wake = nil
                    perform(state.wakeUp())
                    if let closed { return (closed, start.duration(to: clock.now)) }
                }
                if nextStep <= clock.now {
                    each(&self)
                    nextStep = nextStep.advanced(by: step)
                }
            }
            return nil
        }
    }

    @Test func aHeadSentOneByteAtATimeIsCutOffAtTheHeaderTimeoutThoughBytesKeepComing() {
        var connection = Connection(header: 3)
        connection.readComplete()
        #expect(connection.state.phase == .readingHead(since: connection.clock.now))
        // A byte arrives every half second, so the connection is never idle: only the header clock ends it.
        let ended = connection.run(for: .seconds(20)) { $0.readComplete() }
        #expect(ended?.reason == .headerTimeout)
        #expect(ended?.after == .seconds(3))
    }

    @Test func aSlowBodyIsCutOffAtTheBodyTimeout() {
        var connection = Connection(body: 5)
        connection.state.read(.head)
        connection.readComplete()
        let ended = connection.run(for: .seconds(20)) { connection in
            connection.state.read(.body)
            connection.readComplete()
        }
        #expect(ended?.reason == .bodyTimeout)
        #expect(ended?.after == .seconds(5))
    }

    @Test func aWholeRequestInOneReadStartsNoHeaderClock() {
        var connection = Connection(header: 2, idle: 10)
        connection.clock.advance(by: .seconds(1))
        connection.readWholeRequest()
        #expect(connection.state.phase == .betweenRequests)
        let ended = connection.run(for: .seconds(20))
        #expect(ended?.reason == .idle, "only idleness ends a connection between requests")
        // Ten seconds after the read, not after the connection opened.
        #expect(ended?.after == .seconds(10))
    }

    @Test func requestsAndAnswersMoveNoWakeUp() {
        var connection = Connection(idle: 10)
        let held = connection.wake
        for _ in 0..<100 {
            connection.clock.advance(by: .milliseconds(10))
            connection.state.read(.head)
            connection.state.read(.end)
            #expect(connection.state.readComplete() == .none)
            connection.state.wrote(.head)
            connection.state.wrote(.end)
        }
        #expect(connection.wake == held)
        // When it comes, the wake-up finds the connection busy a second ago and asks for the next one.
        connection.clock.advance(by: connection.clock.now.duration(to: held!))
        #expect(connection.state.wakeUp() == .wake(at: connection.clock.now.advanced(by: .seconds(1))))
    }

    @Test func trafficEitherWayKeepsAConnectionOpen() {
        var connection = Connection(idle: 3)
        // A live stream through the router: one request, then a heartbeat written every two seconds.
        connection.readWholeRequest()
        connection.state.wrote(.head)
        var steps = 0
        let ended = connection.run(for: .seconds(100), step: .seconds(1)) { connection in
            steps += 1
            if steps.isMultiple(of: 2) { connection.state.wrote(.body) }
        }
        #expect(ended == nil)
    }

    @Test func aQuietConnectionClosesAtTheIdleTimeout() {
        var connection = Connection(idle: 4)
        let ended = connection.run(for: .seconds(20))
        #expect(ended?.reason == .idle)
        #expect(ended?.after == .seconds(4))
    }

    @Test func aConnectionThatBecameAStreamIsNeverTimed() {
        var connection = Connection(idle: 4)
        connection.readWholeRequest()
        connection.state.wrote(.head)
        connection.state.streamOpened()
        #expect(connection.state.wakeUp() == .none)
        connection.readComplete()
        #expect(connection.run(for: .seconds(1000)) == nil)
    }

    @Test func aClientThatLeavesDuringAStreamedAnswerIsLetGoAtOnce() {
        var connection = Connection()
        connection.readWholeRequest()
        connection.state.wrote(.head)
        #expect(connection.state.inputClosed() == .close(.clientLeft))
    }

    @Test func aClientThatShutsItsSideAfterAskingStillGetsItsAnswer() {
        var connection = Connection()
        connection.readWholeRequest()
        #expect(connection.state.inputClosed() == .none)
        connection.state.wrote(.head)
        connection.state.wrote(.end)
        #expect(connection.state.inputClosed() == .none)
    }
}
