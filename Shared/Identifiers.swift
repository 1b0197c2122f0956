/// The id of one pin, Parse style: ten letters and digits (`CDHfAy8sdp`).
public struct ObjectID: Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String

    public init(_ rawValue: String) { self.rawValue = rawValue }

    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")

    public static func random() -> ObjectID {
        var generator = SystemRandomNumberGenerator()
        return ObjectID(String((0..<10).map { _ in Self.alphabet[Int(generator.next(upperBound: UInt(Self.alphabet.count)))] }))
    }

    /// Ids are printable ASCII of modest length; anything else cannot name a pin.
    public var isWellFormed: Bool {
        !rawValue.isEmpty && rawValue.utf8.count <= 64
            && rawValue.utf8.allSatisfy { ($0 >= 48 && $0 <= 57) || ($0 >= 65 && $0 <= 90) || ($0 >= 97 && $0 <= 122) || $0 == 45 || $0 == 95 }
    }

    public var description: String { rawValue }

    public init(from decoder: any Decoder) throws { rawValue = try decoder.singleValueContainer().decode(String.self) }
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

/// The event stream that holds one pin's history: `location-<objectId>`.
public struct StreamName: Hashable, Sendable, CustomStringConvertible {
    public static let category = "location"
    public let rawValue: String

    public init(_ objectId: ObjectID) { rawValue = "\(Self.category)-\(objectId.rawValue)" }

    public var objectId: ObjectID { ObjectID(String(rawValue.dropFirst(Self.category.count + 1))) }
    public var description: String { rawValue }
}
