import Foundation

/// A spinner on stderr for anything that waits more than 300 ms, on a terminal only; it wipes its line
/// when the wait ends, so what follows starts on a clean line.
enum Spinner {
    private static let frames = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"]
    private static let lock = NSLock()
    nonisolated(unsafe) private static var drawn = false
    nonisolated(unsafe) private static var generation = 0

    static func run<T>(_ label: String, _ work: () async throws -> T) async rethrows -> T {
        guard Terminal.isTerminal(STDERR_FILENO) else { return try await work() }
        let mine = lock.withLock {
            generation += 1
            return generation
        }
        let task = Task.detached {
            try await Task.sleep(for: .milliseconds(300))
            var frame = 0
            while true {
                let going = lock.withLock { () -> Bool in
                    guard generation == mine else { return false }
                    Terminal.write(STDERR_FILENO, "\r\(frames[frame % frames.count]) \(label)")
                    drawn = true
                    return true
                }
                guard going else { return }
                frame += 1
                try await Task.sleep(for: .milliseconds(80))
            }
        }
        defer {
            task.cancel()
            lock.withLock { generation += 1 }
            clearLine()
        }
        return try await work()
    }

    /// Wipes the spinner's line, if it drew one.
    static func clearLine() {
        lock.withLock {
            if drawn { Terminal.write(STDERR_FILENO, "\r\u{1B}[K") }
            drawn = false
        }
    }
}
