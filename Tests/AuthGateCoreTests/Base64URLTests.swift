import Crypto
import Testing

@testable import AuthGateCore

/// Lower-case hex, as nonce hashes and replay keys are written.
@Suite("Hex text")
struct Base64URLTests {
    @Test("every byte is two lower-case digits, in order; a digest's hex is the known one")
    func hex() {
        let every = (0...255).map { UInt8($0) }
        #expect(Base64URL.hex(every) == every.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined())
        #expect(Base64URL.hex([UInt8]()) == "")
        // FIPS 180-2's example: SHA-256 of "abc".
        #expect(
            Base64URL.hex(SHA256.hash(data: Array("abc".utf8)))
                == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }
}
