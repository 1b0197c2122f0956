extension Sequence<UInt8> {
    /// Lower-case hexadecimal, two digits a byte.
    ///
    /// Inlinable so that each caller gets it specialised for its own sequence (a digest, an array): left
    /// generic, every byte went through the iterator's witness table, about 16,000 instructions for a
    /// SHA-256, which the gateway works out for every session it looks up.
    @inlinable
    public var hexString: String {
        var digits: [UInt8] = []
        digits.reserveCapacity(underestimatedCount * 2)
        for byte in self {
            digits.append(hexDigit(byte >> 4))
            digits.append(hexDigit(byte & 0xF))
        }
        return String(decoding: digits, as: UTF8.self)
    }
}

/// The lower-case hexadecimal digit of `value` (0 to 15), as an ASCII byte.
@inlinable
public func hexDigit(_ value: UInt8) -> UInt8 {
    value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "a") + value - 10
}
