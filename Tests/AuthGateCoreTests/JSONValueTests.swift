import Foundation
import Testing

@testable import AuthGateCore

@Suite("JSONValue reader and writer", .timeLimit(.minutes(3)))
struct JSONValueTests {
    @Test("random bytes come in the length asked for, one getrandom each, and do not repeat")
    func randomBytes() {
        for count in [0, 1, 7, 8, 16, 32, 33, 256, 4096] {
            #expect(Base64URL.randomBytes(count).count == count)
        }
        let drawn = Set((0..<1000).map { _ in Base64URL.randomBytes(16) })
        #expect(drawn.count == 1000, "128-bit draws never collide")
        // Every byte value shows up in 64 KiB of output (a zero-filled or constant buffer would not).
        #expect(Set(Base64URL.randomBytes(65536)).count == 256)
        #expect(Base64URL.randomBytes(-1).isEmpty)
    }

    @Test("parses every value type, escapes and surrogate pairs")
    func parse() throws {
        let text = #"{"s":"a\"b\\c\/d\n\u00e9\ud83d\ude00","i":-42,"d":1.5e3,"t":true,"f":false,"n":null,"a":[1,[2,{}]],"big":12345678901234567890}"#
        let value = try JSONValue.parse(Array(text.utf8))
        // 12345678901234567890 is past Int64: it is read as the nearest Double, 12345678901234567168.
        #expect(
            value
                == .object([
                    "s": .string("a\"b\\c/d\né😀"), "i": .integer(-42), "d": .double(1500), "t": true, "f": false, "n": .null,
                    "a": .array([1, .array([2, .object([:])])]), "big": .double(12_345_678_901_234_567_168)
                ])
        )
    }

    @Test("refuses malformed documents", arguments: ["", "{", "{\"a\":}", "[1,]", "01", "1.", "\"\\x\"", "tru", "{} x", "\"\u{01}\"", "\"\\ud800\""])
    func refuses(text: String) {
        #expect(throws: JSONValue.ParseError.self) { try JSONValue.parse(Array(text.utf8)) }
    }

    /// Found by the FuzzJSON target: an exponent past Double's range was read as infinity and
    /// written back as null, so parse -> serialize -> parse changed the value.
    @Test("refuses numbers past Double's range, which JSON could not write back", arguments: ["1e309", "-1e309", "1579501e3087439", "[0.1e99999]"])
    func refusesOutOfRangeNumbers(text: String) {
        #expect(throws: JSONValue.ParseError.self) { try JSONValue.parse(Array(text.utf8)) }
    }

    @Test("refuses duplicate member names at any depth: one name has one value")
    func refusesDuplicateNames() {
        for text in ["{\"a\":1,\"a\":1}", "{\"a\":1,\"b\":{\"c\":2,\"c\":3}}", "[{\"sub\":\"x\",\"sub\":\"y\"}]"] {
            #expect(throws: JSONValue.ParseError.self, "\(text)") { try JSONValue.parse(Array(text.utf8)) }
        }
        #expect((try? JSONValue.parse(Array("{\"a\":1,\"b\":{\"a\":2}}".utf8))) != nil, "the same name in different objects is fine")
    }

    @Test("refuses nesting deeper than 64")
    func depth() {
        #expect(throws: JSONValue.ParseError.self) {
            try JSONValue.parse(Array((String(repeating: "[", count: 65) + String(repeating: "]", count: 65)).utf8))
        }
        #expect((try? JSONValue.parse(Array((String(repeating: "[", count: 60) + String(repeating: "]", count: 60)).utf8))) != nil)
    }

    @Test("writes what it reads, and what Foundation reads the same way")
    func roundTrip() throws {
        let value: JSONValue = .object(["k": .string("q\"\\\n\u{1}/é"), "n": .array([1, .double(0.5), .null, true]), "o": .object(["z": 1, "a": 2])])
        let bytes = value.serialized()
        #expect(String(decoding: bytes, as: UTF8.self) == #"{"k":"q\"\\\n\u0001/é","n":[1,0.5,null,true],"o":{"a":2,"z":1}}"#)
        #expect(try JSONValue.parse(bytes) == value)
        #expect(try JSONDecoder().decode(JSONValue.self, from: Data(bytes)) == value)
    }

    @Test("strings are escaped exactly as byte by byte, whatever their length and wherever the escapes fall among eight-byte words")
    func escapesLikeTheReference() throws {
        // The rule the word-at-a-time writer must match, one scalar at a time.
        let reference = JSONStringReference.quoted
        var generator = SystemRandomNumberGenerator()
        let pieces: [String] = [
            "a", "Z", "0", ".", "-", "_", "~", "\"", "\\", "\n", "\r", "\t", "\u{0}", "\u{1}", "\u{8}", "\u{c}", "\u{1f}", " ", "!", "#", "[", "]",
            "\u{7f}", "é", "😀", "\u{2028}", "\u{ff}", "\u{21}", "\u{5b}", "\u{5d}", "A"
        ]
        for _ in 0..<5000 {
            var text = ""
            for _ in 0..<Int.random(in: 0...40, using: &generator) {
                // Long runs of one piece put an escape at every offset of a word, or none in many words.
                let piece = pieces.randomElement(using: &generator)!
                text += Bool.random(using: &generator) ? piece : String(repeating: piece, count: Int.random(in: 1...17, using: &generator))
            }
            var written: [UInt8] = []
            JSONValue.writeString(text, into: &written)
            #expect(String(decoding: written, as: UTF8.self) == reference(text), "\(Array(text.utf8))")
            #expect((try? JSONValue.parse(written)) == .string(text), "\(Array(text.utf8))")
        }
        // Every byte value at every position of a word, among bytes that need no escape.
        for position in 0..<8 {
            for byte in UInt8(0)...UInt8(0x7f) {
                var bytes = Array(repeating: UInt8(ascii: "x"), count: 8)
                bytes[position] = byte
                let word = bytes.withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) }
                #expect(JSONValue.needsEscape(word) == (byte < 0x20 || byte == 0x22 || byte == 0x5C), "byte \(byte) at \(position)")
            }
            for byte in UInt8(0x80)...UInt8(0xff) {
                var bytes = Array(repeating: UInt8(0xc3), count: 8)
                bytes[position] = byte
                #expect(!JSONValue.needsEscape(bytes.withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) }), "byte \(byte) at \(position)")
            }
        }
    }

    @Test("a string's end, an escape or a raw control character is found wherever it falls among eight-byte words")
    func stringEndsAtAnyOffset() throws {
        for length in 0..<40 {
            let run = String(repeating: "a", count: length)
            #expect(try JSONValue.parse(Array("\"\(run)\"".utf8)) == .string(run))
            #expect(try JSONValue.parse(Array("[\"\(run)\",\"\(run)é\"]".utf8)) == .array([.string(run), .string(run + "é")]))
            #expect(try JSONValue.parse(Array("\"\(run)\\n\(run)\"".utf8)) == .string(run + "\n" + run))
            for control in [UInt8(0), 0x01, 0x0a, 0x1f] {
                let text = Array("\"\(run)".utf8) + [control] + Array("bbbbbbbbb\"".utf8)
                #expect(throws: JSONValue.ParseError.self, "\(control) after \(length)") { try JSONValue.parse(text) }
            }
            #expect(throws: JSONValue.ParseError.self, "unterminated after \(length)") { try JSONValue.parse(Array("\"\(run)".utf8)) }
        }
    }

    @Test("a string is read only when it is well-formed UTF-8, as the standard library judges, wherever a non-ASCII byte falls")
    func stringsAreValidatedUTF8() throws {
        // Well-formed and ill-formed sequences (a lone continuation byte, a truncated sequence,
        // an overlong form, a surrogate, past U+10FFFF, bytes that never occur).
        let sequences: [[UInt8]] = [
            [0xc3, 0xa9], [0xe2, 0x82, 0xac], [0xf0, 0x9f, 0x98, 0x80], [0xef, 0xbf, 0xbd], [0x80], [0xbf], [0xc3], [0xe2, 0x82],
            [0xf0, 0x9f, 0x98], [0xc0, 0xaf], [0xe0, 0x80, 0xaf], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80], [0xfe], [0xff]
        ]
        var generator = SystemRandomNumberGenerator()
        for sequence in sequences {
            let valid = String(validating: sequence, as: UTF8.self)
            for before in 0..<18 {
                let after = Int.random(in: 0..<18, using: &generator)
                let bytes = Array(repeating: UInt8(ascii: "a"), count: before) + sequence + Array(repeating: UInt8(ascii: "b"), count: after)
                let expected = String(validating: bytes, as: UTF8.self)
                #expect((expected != nil) == (valid != nil), "\(bytes)")
                #expect(bytes.withUnsafeBufferPointer { JSONValue.string(validatingUTF8: $0) } == expected, "\(bytes)")
                // Both of the parser's paths: the plain string and the one with an escape.
                for escaped in [false, true] {
                    let text = [UInt8(ascii: "\"")] + bytes + (escaped ? Array(#"\n"#.utf8) : []) + [UInt8(ascii: "\"")]
                    if let expected {
                        #expect(try JSONValue.parse(text) == .string(expected + (escaped ? "\n" : "")), "\(text)")
                    } else {
                        #expect(throws: JSONValue.ParseError.self, "\(text)") { try JSONValue.parse(text) }
                    }
                }
            }
        }
        // Random bytes, mostly ASCII with a high byte now and then, against the standard library.
        for _ in 0..<20_000 {
            let bytes = (0..<Int.random(in: 0..<40, using: &generator)).map { _ in
                Bool.random(using: &generator) ? UInt8.random(in: 0x20..<0x7f, using: &generator) : UInt8.random(in: 0x80...0xff, using: &generator)
            }
            #expect(bytes.withUnsafeBufferPointer { JSONValue.string(validatingUTF8: $0) } == String(validating: bytes, as: UTF8.self), "\(bytes)")
        }
        #expect(JSONValue.string(validatingUTF8: UnsafeBufferPointer(start: nil, count: 0)) == "")
    }

    @Test("objects of any size are written with their members in key order, at every depth")
    func objectsInKeyOrder() throws {
        var generator = SystemRandomNumberGenerator()
        let alphabet = ["a", "B", "z", "é", "0", "_", "ß", "\u{212A}", "K", "\""]
        for _ in 0..<300 {
            var numbers: [String: Int64] = [:]
            for _ in 0..<Int.random(in: 0...40, using: &generator) {
                let key = (0..<Int.random(in: 0...4, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! }.joined()
                numbers[key] = Int64.random(in: 0...9, using: &generator)
            }
            // The reference: members sorted by Swift's String order, keys written as JSON strings.
            let innerText =
                "{"
                + numbers.sorted { $0.key < $1.key }.map { "\(String(decoding: JSONValue.string($0.key).serialized(), as: UTF8.self)):\($0.value)" }
                .joined(separator: ",") + "}"
            let inner = JSONValue.object(numbers.mapValues { .integer($0) })
            let outer = JSONValue.object(["m": inner, "a": .array([inner])])
            #expect(String(decoding: outer.serialized(), as: UTF8.self) == "{\"a\":[\(innerText)],\"m\":\(innerText)}")
            #expect(try JSONValue.parse(outer.serialized()) == outer)
        }
    }

    @Test("agrees with Foundation's decoder on every fixture token's claims")
    func fixtures() throws {
        let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/provider-tokens")
        var checked = 0
        for file in try FileManager.default.contentsOfDirectory(atPath: directory.path) where file.hasSuffix(".json") {
            let data = try Data(contentsOf: directory.appendingPathComponent(file))
            #expect(try JSONValue.parse(Array(data)) == JSONDecoder().decode(JSONValue.self, from: data), "\(file)")
            checked += 1
        }
        #expect(checked >= 32)
    }
    @Test("escapes every control character, quote and backslash wherever it stands in a string, and copies the rest")
    func escapesEverywhere() throws {
        var generator = SystemRandomNumberGenerator()
        let alphabet: [Character] = ["a", "é", "😀", "\"", "\\", "\n", "\r", "\t", "\u{0}", "\u{1f}", "\u{7f}", "/", " "]
        for length in 0..<40 {
            let text = String((0..<length).map { _ in alphabet.randomElement(using: &generator) ?? "a" })
            let bytes = JSONValue.string(text).serialized()
            #expect(!bytes.dropFirst().dropLast().contains { $0 < 0x20 }, "\(text.debugDescription)")
            #expect(try JSONValue.parse(bytes) == .string(text), "\(text.debugDescription)")
            #expect(try JSONDecoder().decode(String.self, from: Data(bytes)) == text, "\(text.debugDescription)")
        }
        // A string that is not stored contiguously as UTF-8 (bridged or lazily built) takes the same path.
        let substring = "x\"y\u{1}z"[...]
        #expect(String(decoding: JSONValue.string(String(substring)).serialized(), as: UTF8.self) == #""x\"y\u0001z""#)
    }

    @Test("timestamps are the text Foundation's ISO 8601 style writes, for any date in years 1 through 9999")
    func timestamps() {
        let style = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
        var generator = SystemRandomNumberGenerator()
        var dates: [Date] = [
            Date(timeIntervalSince1970: 0), Date(timeIntervalSince1970: -0.0005), Date(timeIntervalSince1970: 951_782_400.999_9),
            Date(timeIntervalSince1970: -62_135_596_800), Date(timeIntervalSince1970: 253_402_300_799.999),
            Date(timeIntervalSince1970: 1_700_000_000.123), Date(timeIntervalSince1970: -1.5)
        ]
        for _ in 0..<20_000 {
            dates.append(Date(timeIntervalSince1970: Double.random(in: -62_135_596_800...253_402_300_799, using: &generator)))
            dates.append(Date(timeIntervalSince1970: Double(Int64.random(in: 0...4_000_000_000_000, using: &generator)) / 1000))
        }
        for date in dates {
            #expect(date.rfc3339WithMilliseconds == style.format(date), "\(date.timeIntervalSince1970)")
            // The JSON writer copies the same bytes, unescaped.
            var object = JSONObjectWriter()
            object.rfc3339("at", date)
            #expect(String(decoding: object.finished(), as: UTF8.self) == "{\"at\":\"\(style.format(date))\"}")
        }
        #expect(Date(timeIntervalSince1970: 1e15).rfc3339WithMilliseconds == style.format(Date(timeIntervalSince1970: 1e15)))
    }
}
