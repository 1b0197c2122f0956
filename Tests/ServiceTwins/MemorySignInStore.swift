#if DEBUG
import OnTheMapShared
import Synchronization

@testable import AuthGateway

/// `SignInStore` in memory, for one process.
final class MemorySignInStore: SignInStore {
    private struct State {
        var signIns: [[UInt8]: PendingSignIn] = [:]
        var handoffs: [[UInt8]: (handoff: PendingHandoff, expiresAt: Timestamp)] = [:]
    }

    private let state = Mutex(State())

    func begin(_ signIn: PendingSignIn, stateHash: [UInt8], at now: Timestamp) async throws {
        state.withLock { state in
            state.signIns = state.signIns.filter { now < $0.value.expiresAt }
            state.signIns[stateHash] = signIn
        }
    }

    func take(stateHash: [UInt8], at now: Timestamp) async throws -> PendingSignIn? {
        state.withLock { $0.signIns.removeValue(forKey: stateHash) }.flatMap { now < $0.expiresAt ? $0 : nil }
    }

    func beginHandoff(_ handoff: PendingHandoff, codeHash: [UInt8], expiresAt: Timestamp, at now: Timestamp) async throws {
        state.withLock { state in
            state.handoffs = state.handoffs.filter { now < $0.value.expiresAt }
            state.handoffs[codeHash] = (handoff, expiresAt)
        }
    }

    func takeHandoff(codeHash: [UInt8], at now: Timestamp) async throws -> PendingHandoff? {
        state.withLock { $0.handoffs.removeValue(forKey: codeHash) }.flatMap { now < $0.expiresAt ? $0.handoff : nil }
    }

    /// The account's handoffs gone, as its row's deletion cascades to them: an erased account's.
    func forgetHandoffs(accountKey: String) {
        state.withLock { state in state.handoffs = state.handoffs.filter { $0.value.handoff.accountKey != accountKey } }
    }
}
#endif
