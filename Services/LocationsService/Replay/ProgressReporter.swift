import Foundation

/// Shows how a replay advances: a bar redrawn in place on a terminal, a plain line every few seconds
/// otherwise (logs, CI), both with events per second.
final class ProgressReporter: @unchecked Sendable {
    private let total: Int
    private let interactive: Bool
    private let write: (String) -> Void
    private let started = ContinuousClock.now
    private var lastShown = ContinuousClock.now
    private let lock = NSLock()

    init(
        total: Int, interactive: Bool = isatty(STDOUT_FILENO) == 1,
        write: @escaping (String) -> Void = { text in
            FileHandle.standardOutput.write(Data(text.utf8))
        }
    ) {
        self.total = max(total, 0)
        self.interactive = interactive
        self.write = write
    }

    var elapsed: Duration { ContinuousClock.now - started }

    func rate(_ count: Int) -> Int {
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return seconds > 0 ? Int(Double(count) / seconds) : 0
    }

    /// Reports `count` events read so far; cheap to call often, it draws only now and then.
    func advance(to count: Int, force: Bool = false) {
        lock.lock()
        defer { lock.unlock() }
        let now = ContinuousClock.now
        let interval: Duration = interactive ? .milliseconds(100) : .seconds(2)
        guard force || now - lastShown >= interval else { return }
        lastShown = now
        let shownTotal = max(total, count)
        let fraction = shownTotal == 0 ? 1 : Double(count) / Double(shownTotal)
        if interactive {
            let width = 30
            let filled = Int(fraction * Double(width))
            let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
            write("\r[\(bar)] \(Int(fraction * 100))% \(count)/\(shownTotal) events, \(rate(count)) events/s ")
        } else {
            write("replay: \(count)/\(shownTotal) events (\(Int(fraction * 100))%), \(rate(count)) events/s\n")
        }
    }

    /// Draws the final state and ends the bar's line.
    func finish(_ count: Int) {
        advance(to: count, force: true)
        if interactive { write("\n") }
    }
}
