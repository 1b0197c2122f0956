#if DEBUG
import Foundation
import OnTheMapShared
import Synchronization

@testable import AuthGateway

/// The failed logins in memory, for one process, counted as `auth.count_attempt` counts them: at the
/// moment given, each attempt checked and counted in one step under one lock.
final class MemoryLoginFailureStore: LoginFailureStore {
    private struct Failure {
        let attempt: UUID
        let failedAt: Timestamp
    }

    /// By subject.
    private let failures = Mutex([String: [Failure]]())

    init() {}

    func count(_ attempt: LoginThrottle.Attempt, limits: [Int], window: Duration, at moment: Timestamp) async throws -> Int? {
        let windowMilliseconds = window.components.seconds * 1000
        return failures.withLock { failures in
            // Attempts that have aged out count for nothing: they go.
            for subject in attempt.subjects {
                failures[subject]?.removeAll { $0.failedAt.millisecondsSince1970 + windowMilliseconds <= moment.millisecondsSince1970 }
            }
            // Blocked while `cap` attempts lie inside the window: until the cap-th newest ages out.
            var wait: Int?
            for (subject, cap) in zip(attempt.subjects, limits) {
                let recent = (failures[subject] ?? []).map(\.failedAt.millisecondsSince1970).sorted()
                guard cap >= 1, recent.count >= cap else { continue }
                let counted = recent[recent.count - cap]
                let milliseconds = counted + windowMilliseconds - moment.millisecondsSince1970
                let seconds = max(1, Int((milliseconds + 999) / 1000))
                wait = max(wait ?? seconds, seconds)
            }
            if let wait { return wait }
            for subject in attempt.subjects {
                failures[subject, default: []].append(Failure(attempt: attempt.id, failedAt: moment))
            }
            return nil
        }
    }

    func remove(_ attempt: LoginThrottle.Attempt, forgiving subject: String?) async throws {
        failures.withLock { failures in
            for counted in attempt.subjects {
                if counted == subject {
                    failures[counted] = nil
                } else {
                    failures[counted]?.removeAll { $0.attempt == attempt.id }
                }
            }
        }
    }

    /// Every failure of the subject gone: an erased account's.
    func forget(subject: String) {
        failures.withLock { $0[subject] = nil }
    }
}
#endif
