/// A direct JSON reader and writer for ``JSONValue``: RFC 8259, no Codable machinery. Claims and
/// response bodies go through it on every request.
extension JSONValue {
    /// Why a document did not parse.
    public struct ParseError: Error, Sendable, CustomStringConvertible {
        public let offset: Int
        public let reason: String
        public var description: String { "invalid JSON at byte \(offset): \(reason)" }
    }

    /// Parses a JSON document (one value, surrounding whitespace allowed, nesting up to 64 deep),
    /// strictly: no duplicate member names, no control characters or lone surrogates in strings,
    /// no number past Double's range. Every JSON an outsider sends goes through this reader.
    public static func parse(_ bytes: some Collection<UInt8>) throws -> JSONValue {
        var parser = Parser(bytes: Array(bytes))
        parser.skipWhitespace()
        let value = try parser.value(depth: 0)
        parser.skipWhitespace()
        guard parser.index == parser.bytes.count else { throw parser.error("trailing characters") }
        return value
    }

    /// The compact JSON text of this value; object keys are written in sorted order.
    public func serialized() -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(256)
        write(into: &output)
        return output
    }

    /// Appends this value's compact JSON text to `output` (object keys in sorted order).
    package func write(into output: inout [UInt8]) {
        switch self {
        case .null: output.append(contentsOf: "null".utf8)
        case .bool(let value): output.append(contentsOf: (value ? "true" : "false").utf8)
        case .integer(let value): output.append(contentsOf: String(value).utf8)
        case .double(let value): output.append(contentsOf: (value.isFinite ? "\(value)" : "null").utf8)
        case .string(let value): Self.writeString(value, into: &output)
        case .array(let values):
            output.append(UInt8(ascii: "["))
            for (index, value) in values.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                value.write(into: &output)
            }
            output.append(UInt8(ascii: "]"))
        case .object(let members):
            output.append(UInt8(ascii: "{"))
            Self.withSortedIndices(of: members) { sorted in
                for (position, index) in sorted.enumerated() {
                    if position > 0 { output.append(UInt8(ascii: ",")) }
                    Self.writeString(members[index].key, into: &output)
                    output.append(UInt8(ascii: ":"))
                    members[index].value.write(into: &output)
                }
            }
            output.append(UInt8(ascii: "}"))
        }
    }

    /// Calls `body` with `members`' indices in the order of their keys: the indices are sorted in
    /// temporary memory (on the stack when small), so writing an object neither copies its
    /// members into an array nor retains them (claims and records write metadata objects on
    /// every token).
    private static func withSortedIndices(
        of members: [String: JSONValue], _ body: (UnsafeMutableBufferPointer<[String: JSONValue].Index>) -> Void
    ) {
        withUnsafeTemporaryAllocation(of: [String: JSONValue].Index.self, capacity: members.count) { indices in
            var count = 0
            var index = members.startIndex
            while index != members.endIndex, count < indices.count {
                indices.initializeElement(at: count, to: index)
                count += 1
                index = members.index(after: index)
            }
            var filled = UnsafeMutableBufferPointer(rebasing: indices[0..<count])
            filled.sort { members[$0].key < members[$1].key }
            body(filled)
            _ = filled.deinitialize()
        }
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    /// Appends `text` as a JSON string, quoted and escaped.
    package static func writeString(_ text: String, into output: inout [UInt8]) {
        output.append(UInt8(ascii: "\""))
        let written: Void? = text.utf8.withContiguousStorageIfAvailable { bytes in
            writeEscaped(bytes, into: &output)
        }
        if written == nil { Array(text.utf8).withUnsafeBufferPointer { writeEscaped($0, into: &output) } }
        output.append(UInt8(ascii: "\""))
    }

    /// Appends `bytes` with JSON's escapes; runs that need none (nearly every string) are copied
    /// in one step, and found eight bytes at a time (``needsEscape(_:)``): an access token, a
    /// kilobyte written into every session answer, is read a word at a time, not a byte.
    private static func writeEscaped(_ bytes: UnsafeBufferPointer<UInt8>, into output: inout [UInt8]) {
        guard let base = bytes.baseAddress else { return }
        let count = bytes.count
        var runStart = 0
        var index = 0
        while index < count {
            if count - index >= 8, !needsEscape(UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self)) {
                index += 8
                continue
            }
            let byte = base[index]
            index += 1
            guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
            if runStart < index - 1 { output.append(contentsOf: UnsafeBufferPointer(start: base + runStart, count: index - 1 - runStart)) }
            runStart = index
            switch byte {
            case UInt8(ascii: "\""): output.append(contentsOf: [92, 34])
            case UInt8(ascii: "\\"): output.append(contentsOf: [92, 92])
            case 0x0a: output.append(contentsOf: [92, UInt8(ascii: "n")])
            case 0x0d: output.append(contentsOf: [92, UInt8(ascii: "r")])
            case 0x09: output.append(contentsOf: [92, UInt8(ascii: "t")])
            default:
                output.append(contentsOf: [92, UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0")])
                output.append(hexDigits[Int(byte >> 4)])
                output.append(hexDigits[Int(byte & 15)])
            }
        }
        if runStart < count { output.append(contentsOf: UnsafeBufferPointer(start: base + runStart, count: count - runStart)) }
    }

    /// `bytes` as a `String` when they are well-formed UTF-8, else nil: what
    /// `String(validating:as: UTF8.self)` answers, without its generic path, which looks type
    /// metadata up on every call (about 1,000 instructions per string; a sign-in reads 28).
    /// ASCII text, nearly every string a token, a body or a record holds, is checked eight bytes
    /// at a time and taken as it is; any other text is the standard library's to judge.
    static func string(validatingUTF8 bytes: UnsafeBufferPointer<UInt8>) -> String? {
        var index = 0
        if let base = bytes.baseAddress {
            let highBits: UInt64 = 0x8080_8080_8080_8080
            while bytes.count - index >= 8, UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self) & highBits == 0 { index += 8 }
        }
        while index < bytes.count, bytes[index] < 0x80 { index += 1 }
        guard index == bytes.count else { return String(validating: bytes, as: UTF8.self) }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Whether one of the eight bytes of `word` needs an escape: below 0x20, `"` or `\`. Each test
    /// is the classic borrow trick (a byte's high bit is set in `(x - n) & ~x` when it is below n,
    /// for n up to 0x80; `"` and `\` are the bytes that become zero under an exclusive or). It
    /// errs only on a byte after one that matched, so "any byte" is exact.
    @inline(__always)
    static func needsEscape(_ word: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let quote = word ^ (ones &* 0x22)
        let backslash = word ^ (ones &* 0x5C)
        let control = (word &- ones &* 0x20) & ~word
        let quotes = (quote &- ones) & ~quote
        let backslashes = (backslash &- ones) & ~backslash
        return (control | quotes | backslashes) & (ones &* 0x80) != 0
    }

    private struct Parser {
        let bytes: [UInt8]
        var index = 0

        func error(_ reason: String) -> ParseError { ParseError(offset: index, reason: reason) }

        mutating func skipWhitespace() {
            while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x0a || bytes[index] == 0x0d || bytes[index] == 0x09 { index += 1 }
        }

        mutating func value(depth: Int) throws -> JSONValue {
            guard depth < 64 else { throw error("nested too deeply") }
            guard index < bytes.count else { throw error("unexpected end") }
            switch bytes[index] {
            case UInt8(ascii: "{"): return try object(depth: depth)
            case UInt8(ascii: "["): return try array(depth: depth)
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "t"): return try literal("true", .bool(true))
            case UInt8(ascii: "f"): return try literal("false", .bool(false))
            case UInt8(ascii: "n"): return try literal("null", .null)
            default: return try number()
            }
        }

        mutating func literal(_ text: StaticString, _ value: JSONValue) throws -> JSONValue {
            let expected = UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount)
            guard index + expected.count <= bytes.count, bytes[index..<index + expected.count].elementsEqual(expected) else {
                throw error("unknown literal")
            }
            index += expected.count
            return value
        }

        mutating func object(depth: Int) throws -> JSONValue {
            index += 1
            skipWhitespace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
                index += 1
                return .object([:])
            }
            // Members are collected first so the dictionary is made once at its final size.
            var members: [(key: String, offset: Int, value: JSONValue)] = []
            while true {
                skipWhitespace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw error("expected a key") }
                let keyOffset = index
                let key = try string()
                skipWhitespace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw error("expected :") }
                index += 1
                skipWhitespace()
                members.append((key, keyOffset, try value(depth: depth + 1)))
                skipWhitespace()
                guard index < bytes.count else { throw error("unexpected end") }
                if bytes[index] == UInt8(ascii: ",") {
                    index += 1
                    continue
                }
                guard bytes[index] == UInt8(ascii: "}") else { throw error("expected , or }") }
                index += 1
                var object: [String: JSONValue] = Dictionary(minimumCapacity: members.count)
                for member in members {
                    // One name, one value: a reader that kept the first or the last of two would
                    // decide differently from another that kept the other (RFC 8259 §4, RFC 7519 §4).
                    guard object.updateValue(member.value, forKey: member.key) == nil else {
                        throw ParseError(offset: member.offset, reason: "duplicate member name")
                    }
                }
                return .object(object)
            }
        }

        mutating func array(depth: Int) throws -> JSONValue {
            index += 1
            var values: [JSONValue] = []
            skipWhitespace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
                index += 1
                return .array(values)
            }
            while true {
                skipWhitespace()
                values.append(try value(depth: depth + 1))
                skipWhitespace()
                guard index < bytes.count else { throw error("unexpected end") }
                if bytes[index] == UInt8(ascii: ",") {
                    index += 1
                    continue
                }
                guard bytes[index] == UInt8(ascii: "]") else { throw error("expected , or ]") }
                index += 1
                return .array(values)
            }
        }

        mutating func string() throws -> String {
            index += 1
            // Fast path: most strings have no escape; they become a String in one step. Their end
            // is found eight bytes at a time first (an ID token is a kilobyte-long string).
            let start = index
            bytes.withUnsafeBytes { raw in
                while raw.count - index >= 8, !JSONValue.needsEscape(raw.loadUnaligned(fromByteOffset: index, as: UInt64.self)) { index += 8 }
            }
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: "\"") {
                    index += 1
                    let end = index - 1
                    guard let text = bytes.withUnsafeBufferPointer({ JSONValue.string(validatingUTF8: .init(rebasing: $0[start..<end])) }) else {
                        throw error("invalid UTF-8 in a string")
                    }
                    return text
                }
                if byte == UInt8(ascii: "\\") || byte < 0x20 { break }
                index += 1
            }
            // An escape, a control character or the end: byte by byte from here.
            var output = Array(bytes[start..<index])
            while index < bytes.count {
                let byte = bytes[index]
                index += 1
                switch byte {
                case UInt8(ascii: "\""):
                    guard let text = output.withUnsafeBufferPointer({ JSONValue.string(validatingUTF8: $0) }) else {
                        throw error("invalid UTF-8 in a string")
                    }
                    return text
                case UInt8(ascii: "\\"):
                    guard index < bytes.count else { throw error("unexpected end") }
                    let escape = bytes[index]
                    index += 1
                    switch escape {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): output.append(escape)
                    case UInt8(ascii: "b"): output.append(0x08)
                    case UInt8(ascii: "f"): output.append(0x0c)
                    case UInt8(ascii: "n"): output.append(0x0a)
                    case UInt8(ascii: "r"): output.append(0x0d)
                    case UInt8(ascii: "t"): output.append(0x09)
                    case UInt8(ascii: "u"):
                        var scalar = try hex4()
                        if (0xD800..<0xDC00).contains(scalar) {
                            guard index + 2 <= bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                                throw error("unpaired surrogate")
                            }
                            index += 2
                            let low = try hex4()
                            guard (0xDC00..<0xE000).contains(low) else { throw error("unpaired surrogate") }
                            scalar = 0x10000 + (scalar - 0xD800) << 10 + (low - 0xDC00)
                        }
                        guard let unicode = Unicode.Scalar(scalar) else { throw error("invalid \\u escape") }
                        output.append(contentsOf: Array(String(Character(unicode)).utf8))
                    default:
                        throw error("invalid escape")
                    }
                case 0..<0x20:
                    throw error("control character in a string")
                default:
                    output.append(byte)
                }
            }
            throw error("unterminated string")
        }

        mutating func hex4() throws -> UInt32 {
            guard index + 4 <= bytes.count else { throw error("short \\u escape") }
            var value: UInt32 = 0
            for byte in bytes[index..<index + 4] {
                guard let digit = Base64URL.hexValue(byte) else { throw error("invalid \\u escape") }
                value = value << 4 | UInt32(digit)
            }
            index += 4
            return value
        }

        mutating func number() throws -> JSONValue {
            let start = index
            var isInteger = true
            if index < bytes.count, bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) else { throw error("unexpected character") }
            if bytes[index] == UInt8(ascii: "0") {
                index += 1
            } else {
                while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
                isInteger = false
                index += 1
                let digits = index
                while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
                guard index > digits else { throw error("digits expected after .") }
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
                isInteger = false
                index += 1
                if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
                let digits = index
                while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
                guard index > digits else { throw error("digits expected in the exponent") }
            }
            let text = String(decoding: bytes[start..<index], as: UTF8.self)
            if isInteger, let value = Int64(text) { return .integer(value) }
            // Swift reads an exponent past the range as ±infinity, which JSON cannot say back
            // (it would be written as null): refused, as Go's encoding/json refuses it.
            guard let value = Double(text), value.isFinite else { throw error("number out of range") }
            return .double(value)
        }
    }
}
