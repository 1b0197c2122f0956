import Foundation

/// A child process's exit, awaited on its termination handler rather than by asking whether it still runs.
public final class ProcessExit: Sendable {
    private let exited = Watched<Int32?>(nil)

    /// Sets `process`'s termination handler, then runs it.
    public init(running process: Process) throws {
        process.terminationHandler = { [exited] ended in
            let status = ended.terminationStatus
            exited.update { $0 = status }
        }
        try process.run()
    }

    /// The exit status, or nil while the process still runs after `limit`.
    public func status(within limit: Duration) async -> Int32? {
        _ = await exited.wait(within: limit) { $0 != nil }
        return exited.value
    }
}

/// What a child process writes to a pipe, kept as it arrives, so that a test waits for a text on the write
/// that brings it. Give `pipe` to the process as its standard output or error.
///
/// A thread of its own reads the pipe until the end, blocking in `read`. `FileHandle.readabilityHandler`
/// would watch it with a libdispatch read source instead, and on Linux setting up and tearing down many such
/// sources from several threads at once (tests in parallel, each with its processes) corrupts libdispatch's
/// epoll bookkeeping: its manager thread crashed the test process with SIGSEGV in `_dispatch_event_loop_drain`
/// (swift-corelibs-libdispatch issue 949).
public final class CapturedOutput: Sendable {
    private struct Written {
        var bytes = Data()
        /// The writing end closed: every process that held it has exited.
        var ended = false
    }

    private let written = Watched(Written())
    public let pipe = Pipe()

    public init() {
        Thread { [written, pipe] in
            while case let chunk = pipe.nextChunk(), !chunk.isEmpty {
                written.update { $0.bytes.append(chunk) }
            }
            written.update { $0.ended = true }
        }.start()
    }

    public var text: String { String(decoding: written.value.bytes, as: UTF8.self) }

    /// Whether the writing end has closed: the process has exited (with any child that shared the pipe).
    public var ended: Bool { written.value.ended }

    /// Whether the writing end has closed, now or within `limit`: then `text` is all that was written. A
    /// process's exit can be known before the reading thread has taken its last write.
    public func ended(within limit: Duration) async -> Bool {
        _ = await written.wait(within: limit) { $0.ended }
        return ended
    }

    /// Whether what was written satisfies `condition`, now or within `limit`; false as soon as the output
    /// has ended without it.
    public func wait(within limit: Duration, until condition: @escaping @Sendable (String) -> Bool) async -> Bool {
        _ = await written.wait(within: limit) { $0.ended || condition(String(decoding: $0.bytes, as: UTF8.self)) }
        return condition(text)
    }
}
