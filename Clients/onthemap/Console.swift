import Foundation
import OnTheMapClient

/// What a command reads and writes besides its arguments: the environment, stdin, stdout and stderr, and
/// how its calls reach the gateway. A command run as `onthemap` has the process's own; a program that runs
/// commands inside itself (the tests, over a gateway in memory) sets `current` for the run, with buffers of
/// its own, no terminal, and its transport.
struct Console: Sendable {
    var environment: [String: String]
    /// Takes what the command writes to stdout; nil: the process's stdout.
    var output: (@Sendable ([UInt8]) -> Void)?
    /// Takes what the command writes to stderr; nil: the process's stderr.
    var errors: (@Sendable ([UInt8]) -> Void)?
    /// Gives stdin's next line, without its line end, nil at the end; nil: the process's stdin.
    var input: (@Sendable () -> String?)?
    /// How the clients' calls reach the gateway; nil: over HTTP.
    var transport: (any GatewayTransport)?

    /// Whether the descriptors are the process's own: only then is there a terminal to colour, draw a
    /// spinner on, ask on, or catch Ctrl-C from.
    var isProcess: Bool { output == nil }

    static let process = Console(environment: ProcessInfo.processInfo.environment)

    @TaskLocal static var current = Console.process
}
