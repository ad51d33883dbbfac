import Crypto
import Foundation
import Testing

@testable import AuthGateCore

/// Base64url as tokens are written, and lower-case hex, as nonce hashes and replay keys are.
@Suite("Base64url and hex text")
struct Base64URLTests {
    @Test("base64url is RFC 4648's base64 with - and _ and no padding, for every length and input kind, and decodes back")
    func encodesEveryLength() throws {
        var generator = SystemRandomNumberGenerator()
        for length in 0...200 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let expected = Data(bytes).base64EncodedString()
                .replacing("+", with: "-").replacing("/", with: "_").replacing("=", with: "")
            #expect(Base64URL.encode(bytes) == expected)
            // A collection without contiguous storage takes the other path to the same text.
            #expect(Base64URL.encode(bytes.lazy.map { $0 }) == expected)
            #expect(Base64URL.encode(bytes[...]) == expected)
            #expect(try #require(Base64URL.decode(expected)) == bytes)
        }
        #expect(Base64URL.encode([0xfb, 0xff]) == "-_8")
        #expect(Base64URL.encode([UInt8]()) == "")
    }

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
