/// Where a follower of the event log stands: the committing transaction's id, then the event's position.
///
/// This pair, not `position` alone, is the order in which events become visible: a transaction that took
/// an earlier position may commit later, and a follower that read by position would skip its events.
public struct LogPosition: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var transactionId: Int64
    public var position: Int64

    public static let start = LogPosition(transactionId: 0, position: 0)

    public static func < (lhs: LogPosition, rhs: LogPosition) -> Bool {
        (lhs.transactionId, lhs.position) < (rhs.transactionId, rhs.position)
    }

    /// `<transaction>-<position>`, the form used for `Last-Event-ID` and checkpoints in logs.
    public var description: String { "\(transactionId)-\(position)" }

    public init(transactionId: Int64, position: Int64) {
        self.transactionId = transactionId
        self.position = position
    }

    public init?(_ text: String) {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, let transaction = Int64(parts[0]), let position = Int64(parts[1]),
            transaction >= 0, position >= 0
        else { return nil }
        self.init(transactionId: transaction, position: position)
    }
}
