import Crypto
import ServiceKit
import Testing

@Suite struct HexTests {
    @Test func twoLowerCaseDigitsPerByte() {
        #expect([UInt8]().hexString == "")
        #expect([0x00, 0x09, 0x0a, 0x0f, 0x10, 0xa5, 0xff].hexString == "00090a0f10a5ff")
        // The digest the gateway keys sessions by: the published SHA-256 of "abc".
        #expect(
            SHA256.hash(data: Array("abc".utf8)).hexString
                == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }
}
