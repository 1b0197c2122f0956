/// A setting that is missing or malformed; start-up stops with this one line.
struct ConfigurationError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
