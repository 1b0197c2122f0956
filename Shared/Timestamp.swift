import Foundation

/// A point in time with millisecond precision, as the contract writes it: `2015-02-25T01:10:38.103Z`.
///
/// Pins carry millisecond timestamps on the wire, so they are stored and compared at that precision too;
/// a value read back from the database or the event log is the same value that was written.
public struct Timestamp: Hashable, Comparable, Sendable, CustomStringConvertible {
    public let millisecondsSince1970: Int64

    public init(millisecondsSince1970: Int64) {
        self.millisecondsSince1970 = millisecondsSince1970
    }

    public init(_ date: Date) {
        // Nearest, not down: a millisecond value that went through a Double must come back unchanged.
        self.millisecondsSince1970 = Int64((date.timeIntervalSince1970 * 1000).rounded())
    }

    public static func now() -> Timestamp { Timestamp(Date()) }

    public var date: Date { Date(timeIntervalSince1970: Double(millisecondsSince1970) / 1000) }

    public static func < (lhs: Timestamp, rhs: Timestamp) -> Bool {
        lhs.millisecondsSince1970 < rhs.millisecondsSince1970
    }

    /// ISO-8601 in UTC with exactly three fractional digits and a trailing `Z`.
    public var description: String { iso8601 }

    public var iso8601: String {
        let ms = millisecondsSince1970
        let days = floorDiv(ms, 86_400_000)
        let msOfDay = ms - days * 86_400_000
        let (y, m, d) = Self.civil(fromDays: days)
        let hour = msOfDay / 3_600_000
        let minute = (msOfDay / 60_000) % 60
        let second = (msOfDay / 1000) % 60
        let milli = msOfDay % 1000
        guard (0...9999).contains(y) else {
            return "\(pad(y, 4))-\(pad(m, 2))-\(pad(d, 2))T\(pad(hour, 2)):\(pad(minute, 2)):\(pad(second, 2)).\(pad(milli, 3))Z"
        }
        // The digits written in place, in one string of 24 bytes: padding each part as a string of its own
        // and joining them cost 8,000 instructions a timestamp, and a POST writes five.
        return String(unsafeUninitializedCapacity: 24) { text in
            func put(_ value: Int64, _ width: Int, at start: Int) {
                var rest = value
                for index in (start..<(start + width)).reversed() {
                    text[index] = UInt8(ascii: "0") + UInt8(rest % 10)
                    rest /= 10
                }
            }
            put(y, 4, at: 0)
            text[4] = UInt8(ascii: "-")
            put(m, 2, at: 5)
            text[7] = UInt8(ascii: "-")
            put(d, 2, at: 8)
            text[10] = UInt8(ascii: "T")
            put(hour, 2, at: 11)
            text[13] = UInt8(ascii: ":")
            put(minute, 2, at: 14)
            text[16] = UInt8(ascii: ":")
            put(second, 2, at: 17)
            text[19] = UInt8(ascii: ".")
            put(milli, 3, at: 20)
            text[23] = UInt8(ascii: "Z")
            return 24
        }
    }

    /// The session API's spelling: six fractional digits (`2015-05-10T16:48:30.760000Z`), which some
    /// clients parse as a date.
    public var iso8601Microseconds: String {
        String(iso8601.dropLast()) + "000Z"
    }

    /// Parses `YYYY-MM-DDTHH:MM:SS[.fff…]Z`; fractions beyond milliseconds are truncated.
    public init?(iso8601 text: String) {
        let bytes = Array(text.utf8)
        func number(_ from: Int, _ count: Int) -> Int64? {
            guard from + count <= bytes.count else { return nil }
            var value: Int64 = 0
            for byte in bytes[from..<(from + count)] {
                guard byte >= 48, byte <= 57 else { return nil }
                value = value * 10 + Int64(byte - 48)
            }
            return value
        }
        guard bytes.count >= 20,
            let y = number(0, 4), bytes[4] == UInt8(ascii: "-"),
            let mo = number(5, 2), bytes[7] == UInt8(ascii: "-"),
            let d = number(8, 2), bytes[10] == UInt8(ascii: "T"),
            let h = number(11, 2), bytes[13] == UInt8(ascii: ":"),
            let mi = number(14, 2), bytes[16] == UInt8(ascii: ":"),
            let s = number(17, 2),
            (1...12).contains(mo), (1...Self.daysIn(month: mo, of: y)).contains(d), h < 24, mi < 60, s < 61
        else { return nil }
        var index = 19
        var millis: Int64 = 0
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            var digits = 0
            while index < bytes.count, bytes[index] >= 48, bytes[index] <= 57 {
                if digits < 3 { millis = millis * 10 + Int64(bytes[index] - 48) }
                digits += 1
                index += 1
            }
            guard digits > 0 else { return nil }
            for _ in digits..<max(digits, 3) { millis *= 10 }
        }
        guard index == bytes.count - 1, bytes[index] == UInt8(ascii: "Z") else { return nil }
        let days = Self.days(fromCivil: y, mo, d)
        let milliseconds = ((days * 24 + h) * 60 + mi) * 60_000 + s * 1000 + millis
        // A leap second at the end of 9999 lands in year 10000, which four digits cannot write back.
        guard milliseconds < Self.yearTenThousand else { return nil }
        self.millisecondsSince1970 = milliseconds
    }

    private static let yearTenThousand = days(fromCivil: 10_000, 1, 1) * 86_400_000

    /// 28 to 31: February has 29 days in years divisible by 4, except centuries not divisible by 400.
    static func daysIn(month: Int64, of year: Int64) -> Int64 {
        switch month {
        case 2: return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    // Howard Hinnant's days_from_civil / civil_from_days, proleptic Gregorian calendar.
    static func days(fromCivil year: Int64, _ month: Int64, _ day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = floorDiv(y, 400)
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    static func civil(fromDays days: Int64) -> (Int64, Int64, Int64) {
        let z = days + 719_468
        let era = floorDiv(z, 146_097)
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (m <= 2 ? yoe + era * 400 + 1 : yoe + era * 400, m, d)
    }
}

private func floorDiv(_ a: Int64, _ b: Int64) -> Int64 {
    a >= 0 ? a / b : -((-a + b - 1) / b)
}

private func pad(_ value: Int64, _ width: Int) -> String {
    let digits = String(value)
    return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
}

extension Timestamp: Codable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let value = Timestamp(iso8601: text) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "Not an ISO-8601 UTC timestamp: \(text)")
        }
        self = value
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(iso8601)
    }
}

extension Timestamp {
    /// This time moved on by `duration`, to the millisecond.
    public func adding(_ duration: Duration) -> Timestamp {
        let (seconds, attoseconds) = duration.components
        return Timestamp(millisecondsSince1970: millisecondsSince1970 + seconds * 1000 + attoseconds / 1_000_000_000_000_000)
    }
}
