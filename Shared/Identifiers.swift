/// The id of one pin, Parse style: ten letters and digits (`CDHfAy8sdp`).
public struct ObjectID: Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String

    public init(_ rawValue: String) { self.rawValue = rawValue }

    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789".utf8)

    /// Ten characters drawn uniformly: one number below 62^10 (it fits 64 bits), written in base 62, so an id
    /// costs one read of the system's random source rather than ten.
    public static func random() -> ObjectID {
        var generator = SystemRandomNumberGenerator()
        var number = generator.next(upperBound: idCount)
        var bytes = [UInt8](repeating: 0, count: 10)
        for index in bytes.indices {
            bytes[index] = alphabet[Int(number % 62)]
            number /= 62
        }
        return ObjectID(String(decoding: bytes, as: UTF8.self))
    }

    /// 62^10, how many ids there are.
    private static let idCount: UInt64 = (0..<10).reduce(1) { product, _ in product * 62 }

    /// Ten ASCII letters and digits, the only ids `random()` makes. Anything else cannot name a pin: not the
    /// service's own routes beside the pins (`changes`), nor dot segments, slashes or percent-encoded bytes.
    public var isWellFormed: Bool {
        rawValue.utf8.count == 10 && rawValue.utf8.allSatisfy { ($0 >= 48 && $0 <= 57) || ($0 >= 65 && $0 <= 90) || ($0 >= 97 && $0 <= 122) }
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
