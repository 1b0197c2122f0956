/// The list request most clients send: the newest 100 pins, newest first. Written with its parameters in
/// any order, with or without `skip=0`, or with none at all (the defaults), it asks for the same list, the
/// one both services keep ready to send.
public enum LatestListQuery {
    private static let parameters: [[UInt8]] = ["limit=100", "order=-updatedAt", "skip=0"].map { Array($0.utf8) }

    public static func matches(_ query: Substring?) -> Bool {
        guard let query, !query.isEmpty else { return true }
        // By bytes, not Characters: this runs on every hot read.
        return query.utf8.split(separator: UInt8(ascii: "&")).allSatisfy { parameter in
            parameters.contains { $0.elementsEqual(parameter) }
        }
    }
}

/// The query parameters the pin list understands (the contract's), each with the longest value it takes.
/// The gateway forwards these and no others; the service refuses a longer value, so nothing a client puts
/// in a query reaches storage unbounded.
public enum ListQueryParameter: String, CaseIterable, Sendable {
    case limit, skip, order, uniqueKey, `where`, at

    /// In bytes. A `where` may test a whole link for equality, percent-encoded.
    public var maximumLength: Int {
        switch self {
        case .limit, .skip: 32
        case .order: 256
        case .uniqueKey: 512
        case .where: 8192
        case .at: 64
        }
    }

    /// Why a longer value is refused.
    public var tooLong: String { "\(rawValue) must be at most \(maximumLength) characters." }
}
