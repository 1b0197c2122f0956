#if DEBUG
import HTTPTypes
import Hummingbird
import NIOCore
import NIOEmbedded
import NIOHTTP1
import NIOPosix
import OnTheMapShared
import PostgresNIO
import PreparedHTTP
import Prometheus
import ServiceKit
import Synchronization
import TestSupport

@testable import AuthGateway
@testable import LocationsService

/// locations-service's own router over pins in memory (`MemoryLocationLog`), answering the gateway's hop
/// without a socket or a process: what the gateway forwards meets the service's real routes, validation
/// and error shapes.
struct MemoryLocations: LocationsHop {
    let log: MemoryLocationLog
    let responder: RouterResponder<BasicRequestContext>
    /// What the gateway asked of the service, and whether the service is down.
    let traffic = Traffic()

    /// The requests the service was sent (`GET /v1/StudentLocation?limit=1`), in order, and a switch that
    /// stops it: a stopped service's hop fails every request, as one whose process has exited.
    final class Traffic: Sendable {
        private let state = Mutex((asked: [String](), down: false))

        /// Every request the gateway sent, stopped or not: its method and target.
        var asked: [String] { state.withLock { $0.asked } }
        var isDown: Bool { state.withLock { $0.down } }

        /// The service stops answering.
        func stop() { state.withLock { $0.down = true } }

        fileprivate func record(_ request: String) -> Bool {
            state.withLock { state in
                state.asked.append(request)
                return !state.down
            }
        }
    }

    func execute(
        method: HTTPMethod, target: String, headers: HTTPFields, body: ByteBuffer?, timeout: TimeAmount, on eventLoop: (any EventLoop)?
    ) -> EventLoopFuture<HopAnswer> {
        let promise = (eventLoop ?? MultiThreadedEventLoopGroup.singleton.any()).makePromise(of: HopAnswer.self)
        guard traffic.record("\(method.rawValue) \(target)") else {
            promise.fail(HopFailure.connectionClosed)
            return promise.futureResult
        }
        promise.completeWithTask {
            let request = Request(
                head: HTTPRequest(
                    method: HTTPRequest.Method(method.rawValue)!, scheme: "http", authority: "locations", path: target, headerFields: headers),
                body: RequestBody(buffer: body ?? ByteBuffer()))
            let context = BasicRequestContext(source: ApplicationRequestContextSource(channel: EmbeddedChannel(), logger: TestDatabase.logger))
            let response = try await responder.respond(to: request, context: context)
            let collected = Collected()
            try await response.body.write(collected.writer)
            return HopAnswer(status: response.status.code, headers: ParsedHeaders(response.headers), body: collected.bytes.value)
        }
        return promise.futureResult
    }

    /// What a response body wrote.
    struct Collected {
        let bytes = Box()
        var writer: Writer { Writer(into: bytes) }

        final class Box: @unchecked Sendable {
            var value = ByteBuffer()
        }

        struct Writer: ResponseBodyWriter {
            let into: Box
            mutating func write(_ buffer: ByteBuffer) async throws { into.value.writeImmutableBuffer(buffer) }
            consuming func finish(_ trailingHeaders: HTTPFields?) async throws {}
        }
    }
}

/// What locations-service allows each student unless told otherwise (`PINS_PER_STUDENT`).
let defaultPinsPerStudent = PinCap.defaultPinsPerStudent

/// locations-service's router over a fresh `MemoryLocationLog` (with `pinsPerStudent`), its latest-list
/// cache running, for `body`. Its writes take their moments from `clock`.
func withMemoryLocations<T: Sendable>(
    pinsPerStudent: Int = PinCap.defaultPinsPerStudent, clock: any WallClock = SystemClock(), _ body: (MemoryLocations) async throws -> T
) async throws -> T {
    let registry = PrometheusCollectorRegistry()
    let log = MemoryLocationLog(pinsPerStudent: pinsPerStudent)
    let parts = ServiceParts.inMemory(log, registry: registry, logger: TestDatabase.logger, clock: clock)
    let routes = LocationsService.buildRouter(
        parts, token: InternalToken(TestDatabase.internalToken), counters: RequestCounters(registry: registry), registry: registry)
    return try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { await parts.cache.run() }
        defer { group.cancelAll() }
        return try await body(MemoryLocations(log: log, responder: routes.router.buildResponder()))
    }
}
#endif
