import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What the person at the other end can see: a terminal gets colour, prompts and a spinner; a pipe gets
/// plain, stable text.
enum Terminal {
    static func isTerminal(_ descriptor: Int32) -> Bool { Console.current.isProcess && isatty(descriptor) == 1 }

    /// Colour only on a terminal, never with `NO_COLOR` (https://no-color.org) or `TERM=dumb`.
    static func colours(_ descriptor: Int32) -> Bool {
        let environment = Console.current.environment
        guard isTerminal(descriptor), environment["NO_COLOR"].map(\.isEmpty) ?? true else { return false }
        return environment["TERM"] != "dumb"
    }

    enum Style: String {
        case bold = "1"
        case dim = "2"
        case red = "31"
        case green = "32"
        case yellow = "33"
        case cyan = "36"
    }

    static func style(_ text: String, _ style: Style, on descriptor: Int32 = STDOUT_FILENO) -> String {
        colours(descriptor) ? "\u{1B}[\(style.rawValue)m\(text)\u{1B}[0m" : text
    }

    static func errorStyle(_ text: String) -> String { style(text, .red, on: STDERR_FILENO) }

    /// The terminal's width in columns; nil when stdout is not a terminal (then nothing is cut).
    static var width: Int? {
        guard isTerminal(STDOUT_FILENO) else { return nil }
        var size = winsize()
        if ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 { return Int(size.ws_col) }
        return Console.current.environment["COLUMNS"].flatMap(Int.init) ?? 80
    }

    static func standardOutput(_ text: String) {
        standardOutput(bytes: Array(text.utf8))
    }

    /// Bytes as the gateway sent them (its JSON), ended by a newline, for the program reading stdout.
    static func standardOutput(bytes: [UInt8]) {
        if let output = Console.current.output { return output(bytes + [UInt8(ascii: "\n")]) }
        write(STDOUT_FILENO, bytes + [UInt8(ascii: "\n")])
    }

    static func standardError(_ text: String) {
        if let errors = Console.current.errors { return errors(Array((text + "\n").utf8)) }
        Spinner.clearLine()
        write(STDERR_FILENO, text + "\n")
    }

    /// The next line of stdin, without its line end; nil at the end.
    static func standardInputLine() -> String? {
        if let input = Console.current.input { return input() }
        return readLine(STDIN_FILENO)
    }

    static func write(_ descriptor: Int32, _ text: String) {
        write(descriptor, Array(text.utf8))
    }

    static func write(_ descriptor: Int32, _ text: [UInt8]) {
        var bytes = text[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { systemWrite(descriptor, $0.baseAddress, $0.count) }
            if written < 0, errno == EINTR { continue }
            guard written > 0 else { return }
            bytes = bytes.dropFirst(written)
        }
    }

    /// Ctrl-C runs `handler` on the main queue instead of ending the process where it is, until the returned
    /// watch is cancelled. The signal's handler is in place before this returns, and it only writes a byte to a
    /// pipe that a read source drains: a Ctrl-C that comes before the main queue looks is kept in the pipe,
    /// never dropped (a signal source arms itself later, and a SIGINT set to be ignored until then was lost).
    /// Within a program that runs the command inside itself, SIGINT is that program's: nothing is watched.
    static func onInterrupt(_ handler: @escaping @Sendable () -> Void) -> InterruptWatch? {
        Console.current.isProcess ? InterruptWatch(handler) : nil
    }
    /// The controlling terminal, for prompts even when stdin or stdout is redirected.
    private static func openTTY() throws -> Int32 {
        guard Console.current.isProcess else { throw CommandFailure("no terminal to ask on", .usage) }
        let descriptor = open("/dev/tty", O_RDWR | O_NOCTTY)
        guard descriptor >= 0 else { throw CommandFailure("no terminal to ask on", .usage) }
        return descriptor
    }

    /// Whether there is a terminal to ask on, for a command that must know before it starts.
    static var canAsk: Bool {
        guard let tty = try? openTTY() else { return false }
        close(tty)
        return true
    }

    /// Asks on the terminal and reads one line; nil at end of input.
    static func ask(_ prompt: String) throws -> String? {
        let tty = try openTTY()
        defer { close(tty) }
        write(tty, prompt)
        return readLine(tty)
    }

    /// Asks for a secret with echo off (termios), restoring the terminal however the read ends.
    static func askSecret(_ prompt: String) throws -> String? {
        let tty = try openTTY()
        defer { close(tty) }
        var saved = termios()
        guard tcgetattr(tty, &saved) == 0 else { throw CommandFailure("cannot read the terminal's settings", .failure) }
        var silent = saved
        silent.c_lflag &= ~tcflag_t(ECHO)
        silent.c_lflag |= tcflag_t(ECHONL)
        guard tcsetattr(tty, TCSAFLUSH, &silent) == 0 else { throw CommandFailure("cannot turn off the terminal's echo", .failure) }
        defer { tcsetattr(tty, TCSAFLUSH, &saved) }
        write(tty, prompt)
        return readLine(tty)
    }

    /// Asks a yes/no question; Enter takes `defaultAnswer`.
    static func confirm(_ question: String, defaultAnswer: Bool) throws -> Bool {
        let hint = defaultAnswer ? "[Y/n]" : "[y/N]"
        while true {
            guard let answer = try ask("\(question) \(hint) ")?.trimmingCharacters(in: .whitespaces).lowercased() else { return false }
            if answer.isEmpty { return defaultAnswer }
            if ["y", "yes"].contains(answer) { return true }
            if ["n", "no"].contains(answer) { return false }
        }
    }

    /// One line from `descriptor`, without its line end; nil at end of input before any byte.
    static func readLine(_ descriptor: Int32) -> String? {
        var bytes: [UInt8] = []
        var byte: UInt8 = 0
        while true {
            let count = read(descriptor, &byte, 1)
            if count < 0, errno == EINTR { continue }
            guard count == 1 else { return bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self) }
            if byte == UInt8(ascii: "\n") { break }
            bytes.append(byte)
        }
        if bytes.last == UInt8(ascii: "\r") { bytes.removeLast() }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// The pipe between SIGINT's handler and the main queue; see `Terminal.onInterrupt`.
final class InterruptWatch {
    private let source: any DispatchSourceRead

    fileprivate init(_ handler: @escaping @Sendable () -> Void) {
        let readEnd = Self.pipeReadEnd
        source = DispatchSource.makeReadSource(fileDescriptor: readEnd, queue: .main)
        source.setEventHandler {
            var drained = [UInt8](repeating: 0, count: 16)
            _ = read(readEnd, &drained, drained.count)
            handler()
        }
        signal(SIGINT, writeInterruptByte)
        source.resume()
    }

    func cancel() {
        signal(SIGINT, SIG_DFL)
        source.cancel()
    }

    /// One pipe for the process, made before the first handler is installed; both ends non-blocking, so the
    /// handler never waits and a drain never hangs.
    private static let pipeReadEnd: Int32 = {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { fatalError("cannot make the pipe for Ctrl-C: errno \(errno)") }
        for end in ends {
            _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
        }
        interruptPipeWriteEnd = ends[1]
        return ends[0]
    }()
}

/// Written once, before SIGINT's handler can run; read only by that handler.
private nonisolated(unsafe) var interruptPipeWriteEnd: Int32 = -1

/// SIGINT's handler: async-signal-safe, a single write(2) of one byte.
private func writeInterruptByte(_: Int32) {
    var byte: UInt8 = 1
    _ = systemWrite(interruptPipeWriteEnd, &byte, 1)
}

#if canImport(Glibc)
private let systemWrite = Glibc.write
#elseif canImport(Darwin)
private let systemWrite = Darwin.write
#endif
