import Foundation
import Logging
import NIOCore
import NIOHTTP1
import OnTheMapShared
import ServiceKit
import ServiceLifecycle

/// A student's erasure (`DELETE /v1/accounts/me`), in three steps, each harmless to do again:
/// 1. recorded, and the account's sessions ended on every replica (`AccountStore.beginErasure`);
/// 2. every pin of theirs erased from the log, past and present, by locations-service (`POST /v1/erasures`,
///    one transaction there);
/// 3. the account and all kept of it gone here (`AccountStore.finishErasure`, one transaction).
///
/// A step that fails leaves the record, and `run` finishes every recorded erasure when the gateway starts
/// and every `retryInterval` after: an erasure interrupted anywhere (the gateway or the service killed, the
/// service away) ends erased, never half.
final class Erasures: Service, Sendable {
    enum Outcome: Equatable, Sendable {
        /// Done: this many pins were erased from the log.
        case erased(pins: Int)
        /// Begun, and finished later, once locations-service answers.
        case pending
    }

    private let accounts: any AccountStore
    private let sessions: Sessions
    private let locations: LocationsClient
    /// This replica's copy of the list, dropped once pins are erased (as after a write); other replicas
    /// drop theirs when their live feed sees the log move.
    private let latest: LatestListCache
    /// Where each erasure is recorded once begun, for a restore to erase again (nil: not recorded).
    private let ledger: RestoreLedger?
    private let logger: Logger
    private let retryInterval: Duration
    private let clock: any Clock<Duration>

    init(
        accounts: any AccountStore, sessions: Sessions, locations: LocationsClient, latest: LatestListCache, ledger: RestoreLedger? = nil,
        logger: Logger,
        retryInterval: Duration = .seconds(5),
        clock: any Clock<Duration> = ContinuousClock()
    ) {
        self.accounts = accounts
        self.sessions = sessions
        self.locations = locations
        self.latest = latest
        self.ledger = ledger
        self.logger = logger
        self.retryInterval = retryInterval
        self.clock = clock
    }

    func erase(_ account: Account, requestID: String) async throws -> Outcome {
        try await accounts.beginErasure(key: account.key)
        record(account.key)
        // This replica's copy of the sessions goes before anything else is done: the one asking, told its
        // session is over, would otherwise find it live here until the announcement came back.
        sessions.sessionsEnded(accountKey: account.key)
        do {
            return .erased(pins: try await finish(account.key, requestID: requestID))
        } catch GatewayError.locationsUnavailable {
            logger.warning("erasure begun; it ends once locations-service answers", metadata: ["request_id": "\(requestID)"])
            return .pending
        }
    }

    /// The erasure in the restore ledger, once begun: from then on it ends erased, so a restore to a moment
    /// before it must erase again. The key and the time only. An erasure the ledger could not take goes on
    /// (the student asked for it, and it is recorded in the database), and the error says what a restore
    /// would bring back.
    private func record(_ key: String) {
        ledger?.appendOrReport(.init(kind: .erased, account: key), undone: "bring the erased account back", logger: logger)
    }

    /// Steps 2 and 3 of the erasure of the account with this key.
    private func finish(_ key: String, requestID: String) async throws -> Int {
        let answer = try await locations.send(
            method: .POST, path: "/v1/erasures", query: nil, headers: [:], body: nil,
            actor: Actor(key: key, firstName: "", lastName: ""), requestID: requestID)
        guard answer.status == 200, let erased = try? JSONDecoder().decode(ErasedPins.self, from: Data(buffer: answer.body)) else {
            logger.warning("locations-service refused an erasure", metadata: ["status": "\(answer.status)", "request_id": "\(requestID)"])
            throw GatewayError.locationsUnavailable
        }
        latest.invalidate()
        try await accounts.finishErasure(key: key)
        return erased.pins
    }

    private struct ErasedPins: Decodable { let pins: Int }

    /// Finishes every erasure recorded and not finished, now and every `retryInterval`, until shutdown.
    func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                await self.finishRecorded()
                guard (try? await self.clock.sleep(for: self.retryInterval)) != nil else { return }
            }
        }
    }

    private func finishRecorded() async {
        do {
            for key in try await accounts.pendingErasures() {
                let pins = try await finish(key, requestID: "erasure")
                logger.info("an interrupted erasure is finished", metadata: ["pins": "\(pins)"])
            }
        } catch {
            logger.debug("recorded erasures wait", metadata: ["error": "\(String(reflecting: error))"])
        }
    }
}
