import NIOCore
import NIOHTTP1
import Testing

@testable import PreparedHTTP

/// The decisions of one connection, event by event, without a channel: which requests the handler takes,
/// what it holds back, and when it reads and lets a shutdown through.
@Suite struct PreparedConnectionStateTests {
    static let list = PreparedResponse(status: .ok, headers: [.contentType: "application/json"], body: ByteBuffer(string: "[]"))
    static let echo = PreparedDeferral(bodyLimit: 8) { _, _, _, _, answer in answer(list) }

    /// One connection's state, which takes GET /list (from memory) and POST /echo (deferred, bodies up to
    /// 8 bytes) and routes the rest; a reference, so that each step can be checked where it is taken.
    final class Connection {
        var state = PreparedConnectionState { request in
            switch (request.method, request.path) {
            case (.GET, "/list"): (.answer(PreparedConnectionStateTests.list), "GET /list")
            case (.POST, "/echo"): (.deferred(PreparedConnectionStateTests.echo), "POST /echo")
            default: nil
            }
        }

        func receive(_ part: HTTPServerRequestPart) -> PreparedConnectionState.Action { state.receive(part) }
        func answerWritten() -> PreparedConnectionState.AfterAnswer { state.answerWritten() }
        func nextHeld() -> HTTPServerRequestPart? { state.nextHeld() }
        func resumeReading() -> Bool { state.resumeReading() }
        func readRequested() -> Bool { state.readRequested() }
        func shutdownRequested() -> Bool { state.shutdownRequested() }
        func routedAnswerEnded() { state.routedAnswerEnded() }
        var routedAnswerIsHeadOnly: Bool { state.routedAnswerIsHeadOnly }
    }

    func head(_ method: HTTPMethod, _ uri: String, _ headers: HTTPHeaders = [:], version: HTTPVersion = .http1_1) -> HTTPServerRequestPart {
        .head(HTTPRequestHead(version: version, method: method, uri: uri, headers: headers))
    }

    func body(_ text: String) -> HTTPServerRequestPart { .body(ByteBuffer(string: text)) }

    @Test func aRequestAnsweredFromMemoryIsTakenAndAnsweredAtItsEnd() {
        let state = Connection()
        #expect(state.receive(head(.GET, "/list?limit=100")) == .take(route: "GET /list"))
        #expect(state.receive(body("ignored")) == PreparedConnectionState.Action.none)
        #expect(state.receive(.end(nil)) == .answer(Self.list))
        #expect(state.answerWritten() == .goOn)
        #expect(state.nextHeld() == nil)
        #expect(state.resumeReading() == false)
    }

    @Test func aDeferredAnswerGetsTheBodyInOnePieceOrNothingPastTheLimit() {
        let state = Connection()
        #expect(state.receive(head(.POST, "/echo")) == .take(route: "POST /echo"))
        _ = state.receive(body("pin"))
        _ = state.receive(body("-1"))
        #expect(state.receive(.end(nil)) == .respond(Self.echo, body: ByteBuffer(string: "pin-1")))
        #expect(state.answerWritten() == .goOn)

        _ = state.receive(head(.POST, "/echo"))
        _ = state.receive(body("12345"))
        _ = state.receive(body("6789"))
        #expect(state.receive(.end(nil)) == .respond(Self.echo, body: nil))
    }

    @Test func whatTheHandlerDoesNotTakeGoesToTheRouterPartByPart() {
        let state = Connection()
        for part in [head(.GET, "/other"), body("x"), .end(nil)] {
            #expect(state.receive(part) == .route(part))
        }
        state.routedAnswerEnded()
        let closing: HTTPHeaders = ["Connection": "close"]
        #expect(state.receive(head(.GET, "/list", closing)) == .route(head(.GET, "/list", closing)))
        _ = state.receive(.end(nil))
        state.routedAnswerEnded()
        // A body announced: the client is told to send it (the router would not), then the router has it.
        let continuing: HTTPHeaders = ["Expect": "100-continue"]
        #expect(state.receive(head(.POST, "/echo", continuing)) == .continueAndRoute(head(.POST, "/echo", continuing)))
        _ = state.receive(.end(nil))
        // Behind an answer still owed, the interim one would overtake it: none is sent.
        #expect(state.receive(head(.POST, "/echo", continuing)) == .route(head(.POST, "/echo", continuing)))
    }

    @Test func anHTTP10RequestGoesToTheRouterToldToCloseTheConnectionUnlessItAskedToKeepIt() {
        let state = Connection()
        #expect(state.receive(head(.GET, "/list", version: .http1_0)) == .route(head(.GET, "/list", ["Connection": "close"], version: .http1_0)))
        let kept: HTTPHeaders = ["Connection": "keep-alive"]
        #expect(state.receive(head(.GET, "/list", kept, version: .http1_0)) == .route(head(.GET, "/list", kept, version: .http1_0)))
    }

    @Test func whileTheRouterOwesAnAnswerEveryRequestGoesToItToo() {
        let state = Connection()
        _ = state.receive(head(.GET, "/slow"))
        _ = state.receive(.end(nil))
        #expect(state.receive(head(.GET, "/list")) == .route(head(.GET, "/list")))
        _ = state.receive(.end(nil))
        state.routedAnswerEnded()
        #expect(state.receive(head(.GET, "/list")) == .route(head(.GET, "/list")), "one of two routed answers is still owed")
        _ = state.receive(.end(nil))
        state.routedAnswerEnded()
        state.routedAnswerEnded()
        #expect(state.receive(head(.GET, "/list")) == .take(route: "GET /list"))
    }

    @Test func theRoutersAnswerToAHeadIsItsHeadAloneAndTheNextOneIsWhole() {
        let state = Connection()
        for method in [HTTPMethod.HEAD, .GET] {
            _ = state.receive(head(method, "/other"))
            _ = state.receive(.end(nil))
        }
        #expect(state.routedAnswerIsHeadOnly)
        state.routedAnswerEnded()
        #expect(!state.routedAnswerIsHeadOnly)
        state.routedAnswerEnded()
        #expect(state.receive(head(.GET, "/list")) == .take(route: "GET /list"))
    }

    @Test func whatArrivesWhileAnAnswerIsOwedIsHeldInOrderAndReadingPausesOnlyThen() {
        let state = Connection()
        _ = state.receive(head(.POST, "/echo"))
        #expect(state.readRequested(), "reading goes on while the body arrives")
        _ = state.receive(.end(nil))
        #expect(state.readRequested(), "nothing held yet: no pause for a client that waits for its answer")
        let pipelined = [head(.GET, "/list"), .end(nil), head(.GET, "/other"), .end(nil)]
        for part in pipelined { #expect(state.receive(part) == PreparedConnectionState.Action.none) }
        #expect(state.readRequested() == false)

        #expect(state.answerWritten() == .goOn)
        #expect(state.nextHeld() == pipelined[0])
        #expect(state.receive(pipelined[0]) == .take(route: "GET /list"))
        #expect(state.nextHeld() == pipelined[1])
        #expect(state.receive(pipelined[1]) == .answer(Self.list))
        #expect(state.nextHeld() == nil, "another answer is owed: the rest waits for it")
        #expect(state.resumeReading() == false)
        #expect(state.answerWritten() == .goOn)
        #expect(state.nextHeld() == pipelined[2])
        #expect(state.receive(pipelined[2]) == .route(pipelined[2]))
        #expect(state.nextHeld() == pipelined[3])
        #expect(state.receive(pipelined[3]) == .route(pipelined[3]))
        #expect(state.nextHeld() == nil)
        #expect(state.resumeReading(), "the read put off goes ahead once")
        #expect(state.resumeReading() == false)
    }

    @Test func aShutdownWaitsForTheOwedAnswerThenDropsWhatWasHeld() {
        let state = Connection()
        #expect(state.shutdownRequested(), "nothing owed: it passes at once")
        _ = state.receive(head(.POST, "/echo"))
        #expect(state.shutdownRequested() == false, "a body is still being read")
        _ = state.receive(.end(nil))
        _ = state.receive(head(.GET, "/list"))
        #expect(state.answerWritten() == .passShutdownOn)
        #expect(state.nextHeld() == nil)
        #expect(state.shutdownRequested())
    }
}
