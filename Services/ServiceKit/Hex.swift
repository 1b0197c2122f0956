extension Sequence<UInt8> {
    /// Lower-case hexadecimal, two digits a byte.
    public var hexString: String {
        let digits = Array("0123456789abcdef")
        var text = ""
        for byte in self {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0xF)])
        }
        return text
    }
}
