import NIOCore
import NIOHTTP1
import Testing

@testable import AuthGateway

/// The hop's pool and one exchange decided without a socket: connections and requests are names, time is
/// given with each event.
@Suite struct HopStatesTests {
    typealias Pool = HopPoolState<String, String>
    static let start = NIODeadline.uptimeNanoseconds(1_000_000_000)

    static func pool(connections: Int = 2, waiting: Int = 2, idleLifetime: TimeAmount = .seconds(30)) -> Pool {
        Pool(limits: .init(maximumConnections: connections, maximumWaiting: waiting, idleLifetime: idleLifetime))
    }

    /// What `next` says, as words a test compares.
    static func describe(_ next: Pool.Next) -> String {
        switch next {
        case .none: "none"
        case .start(let request, let connection): "start \(request) on \(connection)"
        case .connect(let request): "connect for \(request)"
        case .refuse(let request): "refuse \(request)"
        }
    }

    static func send(_ request: String, to pool: inout Pool, at now: NIODeadline = start, within: TimeAmount = .seconds(5)) -> String {
        describe(pool.send(request, deadline: now + within, now: now).next)
    }

    @Test func requestsOpenConnectionsUpToTheLimitThenWaitThenAreRefused() {
        var pool = Self.pool(connections: 2, waiting: 1)
        #expect(Self.send("a", to: &pool) == "connect for a")
        #expect(Self.send("b", to: &pool) == "connect for b")
        #expect(Self.send("c", to: &pool) == "none", "waits for a connection")
        #expect(Self.send("d", to: &pool) == "refuse d", "the waiting room is full")
        #expect(pool.open == 2)
    }

    @Test func aReleasedConnectionTakesTheOldestWaitingRequestWhoseTimeIsNotUp() {
        var pool = Self.pool(connections: 1, waiting: 3)
        _ = Self.send("a", to: &pool)
        _ = Self.send("b", to: &pool, within: .seconds(1))
        _ = Self.send("c", to: &pool, within: .seconds(10))
        _ = Self.send("d", to: &pool, within: .seconds(10))
        let action = pool.released("one", now: Self.start + .seconds(2))
        #expect(action.expired == ["b"])
        #expect(Self.describe(action.next) == "start c on one")
        #expect(Self.describe(pool.released("one", now: Self.start + .seconds(3)).next) == "start d on one")
        // Nobody waits any more: the connection is kept for the next request.
        #expect(Self.describe(pool.released("one", now: Self.start + .seconds(4)).next) == "none")
        #expect(Self.send("e", to: &pool, at: Self.start + .seconds(5)) == "start e on one")
    }

    @Test func theConnectionIdleTheShortestTimeIsUsedFirst() {
        var pool = Self.pool()
        _ = Self.send("a", to: &pool)
        _ = Self.send("b", to: &pool)
        _ = pool.released("one", now: Self.start)
        _ = pool.released("two", now: Self.start + .seconds(1))
        #expect(Self.send("c", to: &pool, at: Self.start + .seconds(2)) == "start c on two")
    }

    @Test func aConnectionIdlePastItsLifetimeIsClosedAndCountsUntilItHasClosed() {
        var pool = Self.pool(connections: 1, idleLifetime: .seconds(30))
        _ = Self.send("a", to: &pool)
        _ = pool.released("one", now: Self.start)
        let late = Self.start + .seconds(30)
        let action = pool.send("b", deadline: late + .seconds(5), now: late)
        #expect(action.close == ["one"])
        #expect(Self.describe(action.next) == "none", "the closing connection still holds the one place")
        #expect(Self.describe(pool.closed("one", now: late).next) == "connect for b")
    }

    @Test func aConnectionThatClosesWhileIdleIsNotUsedAgain() {
        var pool = Self.pool()
        _ = Self.send("a", to: &pool)
        _ = pool.released("one", now: Self.start)
        #expect(Self.describe(pool.closed("one", now: Self.start).next) == "none")
        #expect(pool.open == 0)
        #expect(Self.send("b", to: &pool) == "connect for b")
    }

    @Test func aConnectionThatCouldNotBeOpenedGivesItsPlaceToTheNextWaitingRequest() {
        var pool = Self.pool(connections: 1)
        _ = Self.send("a", to: &pool)
        _ = Self.send("b", to: &pool)
        #expect(Self.describe(pool.closed(nil, now: Self.start).next) == "connect for b")
        #expect(pool.open == 1)
    }

    @Test func closingIdleConnectionsTakesThemAllFromThePool() {
        var pool = Self.pool()
        _ = Self.send("a", to: &pool)
        _ = Self.send("b", to: &pool)
        _ = pool.released("one", now: Self.start)
        _ = pool.released("two", now: Self.start)
        #expect(Set(pool.takeIdle()) == ["one", "two"])
        #expect(pool.takeIdle().isEmpty)
    }

    // MARK: One exchange

    typealias Exchange = HopExchangeState<String>

    static func head(_ status: HTTPResponseStatus = .ok, _ headers: HTTPHeaders = [:]) -> HTTPClientResponsePart {
        .head(HTTPResponseHead(version: .http1_1, status: status, headers: headers))
    }

    static func body(_ text: String) -> HTTPClientResponsePart { .body(ByteBuffer(string: text)) }

    /// How an exchange ended, as words a test compares.
    static func describe(_ action: Exchange.Action) -> String {
        switch action {
        case .none: "none"
        case .send(let request): "send \(request)"
        case .close: "close"
        case .finish(let request, .success(let answer), let reuse):
            "\(request): \(answer.status) \(String(buffer: answer.body))" + (reuse ? ", reuse" : ", close")
        case .finish(let request, .failure(let error), let reuse):
            "\(request): \(error)" + (reuse ? ", reuse" : ", close")
        }
    }

    @Test func anAnswerInPartsIsCollectedWholeAndTheConnectionKept() {
        var exchange = Exchange(maximumAnswer: 100)
        #expect(Self.describe(exchange.start("a", keepAlive: true)) == "send a")
        #expect(Self.describe(exchange.read(Self.head(.created))) == "none")
        #expect(Self.describe(exchange.read(Self.body(#"{"obj"#))) == "none")
        #expect(Self.describe(exchange.read(Self.body(#"ectId":"x"}"#))) == "none")
        #expect(Self.describe(exchange.read(.end(nil))) == #"a: 201 {"objectId":"x"}, reuse"#)
        #expect(Self.describe(exchange.start("b", keepAlive: true)) == "send b")
    }

    @Test func aConnectionEitherSideMeansToCloseIsNotKept() {
        var exchange = Exchange(maximumAnswer: 100)
        _ = exchange.start("a", keepAlive: true)
        _ = exchange.read(Self.head(.ok, ["Connection": "close"]))
        #expect(Self.describe(exchange.read(.end(nil))) == "a: 200 , close")
        var asked = Exchange(maximumAnswer: 100)
        _ = asked.start("b", keepAlive: false)
        _ = asked.read(Self.head())
        #expect(Self.describe(asked.read(.end(nil))) == "b: 200 , close")
    }

    @Test func anAnswerPastTheLimitFailsAndItsConnectionIsNotUsedAgain() {
        var exchange = Exchange(maximumAnswer: 4)
        _ = exchange.start("a", keepAlive: true)
        _ = exchange.read(Self.head())
        #expect(Self.describe(exchange.read(Self.body("abc"))) == "none")
        #expect(Self.describe(exchange.read(Self.body("de"))) == "a: answerTooLarge, close")
        #expect(Self.describe(exchange.read(.end(nil))) == "close")
        #expect(Self.describe(exchange.start("b", keepAlive: true)) == "b: connectionClosed, close")
    }

    @Test func anAnswerNobodyAskedForClosesTheConnection() {
        var exchange = Exchange(maximumAnswer: 100)
        #expect(Self.describe(exchange.read(Self.head())) == "close")
        #expect(Self.describe(exchange.start("a", keepAlive: true)) == "a: connectionClosed, close")
    }

    @Test func anAnswerThatEndsBeforeItsHeadIsAClosedConnection() {
        var exchange = Exchange(maximumAnswer: 100)
        _ = exchange.start("a", keepAlive: true)
        #expect(Self.describe(exchange.read(.end(nil))) == "a: connectionClosed, close")
    }

    @Test func theTimeRunningOutOrTheConnectionEndingFailsTheRequestOnce() {
        var exchange = Exchange(maximumAnswer: 100)
        _ = exchange.start("a", keepAlive: true)
        _ = exchange.read(Self.head())
        #expect(Self.describe(exchange.fail(HopFailure.timedOut)) == "a: timedOut, close")
        // The connection then closes: the request has had its answer already.
        #expect(Self.describe(exchange.fail(HopFailure.connectionClosed)) == "none")
    }
}
