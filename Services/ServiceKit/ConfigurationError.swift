import Foundation

/// A setting that is missing or malformed; start-up stops with this one line.
public struct ConfigurationError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// Reads the settings from the process environment, or stops the command with one clear line on
/// standard error (exit status 2), as every command does with a missing or malformed setting.
public func configurationOrExit<T>(_ command: String, _ read: ([String: String]) throws(ConfigurationError) -> T) -> T {
    do {
        let environment = ProcessInfo.processInfo.environment
        try LogFormat.fromEnvironment(environment).bootstrap(service: command)
        return try read(environment)
    } catch {
        FileHandle.standardError.write(Data("\(command): \(error.description)\n".utf8))
        exit(2)
    }
}
