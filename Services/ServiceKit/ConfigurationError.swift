/// A setting that is missing or malformed; start-up stops with this one line.
public struct ConfigurationError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
