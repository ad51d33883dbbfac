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

    @Test("decoding accepts exactly the canonical spellings (RFC 7515 §2): random text against a reference, every length, every position")
    func decodesOnlyCanonicalText() throws {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        /// The reference: base64url's alphabet, a length standard base64 can pad, and the one
        /// spelling that encoding the decoded bytes gives back.
        func reference(_ text: [UInt8]) -> [UInt8]? {
            guard text.allSatisfy(alphabet.contains), text.count % 4 != 1 else { return nil }
            let standard = text.map { $0 == UInt8(ascii: "-") ? UInt8(ascii: "+") : $0 == UInt8(ascii: "_") ? UInt8(ascii: "/") : $0 }
            let padded = String(decoding: standard, as: UTF8.self) + String(repeating: "=", count: (4 - text.count % 4) % 4)
            guard let data = Data(base64Encoded: padded) else { return nil }
            return Base64URL.encode(Array(data)) == String(decoding: text, as: UTF8.self) ? Array(data) : nil
        }
        var generator = SystemRandomNumberGenerator()
        let others = Array("+/= .\u{0}".utf8) + [0x80, 0xc3, 0xff, UInt8(ascii: "A") - 1, UInt8(ascii: "z") + 1]
        var accepted = 0
        for _ in 0..<20_000 {
            let length = Int.random(in: 0...23, using: &generator)
            let text = (0..<length).map { _ in
                Int.random(in: 0..<50, using: &generator) == 0 ? others.randomElement(using: &generator)! : alphabet.randomElement(using: &generator)!
            }
            let expected = reference(text)
            #expect(Base64URL.decode(bytes: text) == expected, "\(String(decoding: text, as: UTF8.self))")
            #expect(Base64URL.decode(String(decoding: text, as: UTF8.self)) == expected)
            #expect(Base64URL.decode(bytes: text.lazy.map { $0 }) == expected, "a collection without contiguous storage")
            if expected != nil { accepted += 1 }
        }
        #expect(accepted > 1000, "the random text holds canonical spellings too")
        // Every byte string up to 40 bytes: its spelling decodes back; the same with a byte
        // outside the alphabet at any position, padding, or other trailing bits does not.
        for length in 0...40 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let text = Array(Base64URL.encode(bytes).utf8)
            #expect(Base64URL.decode(bytes: text) == bytes)
            for position in text.indices {
                for other in others {
                    var broken = text
                    broken[position] = other
                    #expect(Base64URL.decode(bytes: broken) == nil, "\(other) at \(position) of \(length)")
                    if !Array("+/=".utf8).contains(other) {
                        #expect(Base64URL.decodeLenient(String(decoding: broken, as: UTF8.self)) == nil, "\(other) at \(position) of \(length)")
                    }
                }
            }
            if length % 3 != 0 {
                #expect(Base64URL.decode(bytes: text + Array("=".utf8)) == nil)
                var loose = text
                loose[loose.count - 1] = alphabet[(alphabet.firstIndex(of: loose[loose.count - 1])! + 1) % 64]
                #expect(Base64URL.decode(bytes: loose) == nil, "other trailing bits, length \(length)")
                // Key material: padding and the standard alphabet are accepted, trailing bits ignored.
                #expect(Base64URL.decodeLenient(Data(bytes).base64EncodedString()) == bytes)
                #expect(Base64URL.decodeLenient(String(decoding: loose, as: UTF8.self)) == bytes)
            }
        }
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
