import OnTheMapShared

/// A moment in the log's past, for the list's `at`, spelled as the gateway reads it: an RFC 3339 time
/// (`2026-11-26T09:30:00Z`, with fractions of a second or an offset such as `+01:00`) or a date alone
/// (`2026-11-26`, its midnight in UTC). The gateway judges the spelling, so a person's text goes as typed:
/// a malformed or future moment comes back as `OnTheMapError.refused`.
public struct Moment: Sendable, Hashable, CustomStringConvertible {
    public var text: String

    public init(_ text: String) {
        self.text = text
    }

    /// The moment of a pin's `createdAt` or `updatedAt`, or of an entry in its history.
    public init(_ timestamp: Timestamp) {
        self.text = timestamp.iso8601
    }

    public var description: String { text }
}
