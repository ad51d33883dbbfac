import CSystemRandom

#if canImport(FoundationEssentials)
    public import FoundationEssentials
#else
    public import Foundation
#endif

/// Base64url (RFC 4648 §5) without padding, as JWS and JWK use it, plus lower-case hex. Byte-level
/// code: these run several times per request.
///
/// Decoding is strict (RFC 7515 §2): the URL-safe alphabet only, no `=` padding, and the unused
/// bits of the last character zero. Every byte string then has exactly one spelling, so a token
/// cannot be re-encoded into a "new" token that a replay record, a cache or a deny-list misses.
public enum Base64URL {
    private static let alphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
    private static let reverse: [UInt8] = {
        var table = [UInt8](repeating: 0xff, count: 256)
        for (index, byte) in alphabet.enumerated() { table[Int(byte)] = UInt8(index) }
        return table
    }()
    /// ``reverse`` plus the standard alphabet's `+` and `/`.
    private static let lenientReverse: [UInt8] = {
        var table = reverse
        table[Int(UInt8(ascii: "+"))] = 62
        table[Int(UInt8(ascii: "/"))] = 63
        return table
    }()
    static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    /// Encodes without `=` padding, straight into the string's storage: a token's payload, its
    /// signature and every refresh token pass through here on each mint, and a byte array grown
    /// one character at a time, then validated and copied into a string, cost more than the
    /// encoding.
    public static func encode(_ bytes: some Collection<UInt8>) -> String {
        if let encoded = bytes.withContiguousStorageIfAvailable({ encode(buffer: $0) }) { return encoded }
        return Array(bytes).withUnsafeBufferPointer { encode(buffer: $0) }
    }

    private static func encode(buffer input: UnsafeBufferPointer<UInt8>) -> String {
        let (whole, remaining) = input.count.quotientAndRemainder(dividingBy: 3)
        let length = whole * 4 + (remaining == 0 ? 0 : remaining + 1)
        return alphabet.withUnsafeBufferPointer { alphabet in
            String(unsafeUninitializedCapacity: length) { output in
                var written = 0
                var index = 0
                while index + 3 <= input.count {
                    let value = UInt32(input[index]) << 16 | UInt32(input[index + 1]) << 8 | UInt32(input[index + 2])
                    output[written] = alphabet[Int(value >> 18 & 63)]
                    output[written + 1] = alphabet[Int(value >> 12 & 63)]
                    output[written + 2] = alphabet[Int(value >> 6 & 63)]
                    output[written + 3] = alphabet[Int(value & 63)]
                    written += 4
                    index += 3
                }
                if remaining > 0 {
                    let second = remaining == 2 ? UInt32(input[index + 1]) << 8 : 0
                    let value = UInt32(input[index]) << 16 | second
                    output[written] = alphabet[Int(value >> 18 & 63)]
                    output[written + 1] = alphabet[Int(value >> 12 & 63)]
                    written += 2
                    if remaining == 2 {
                        output[written] = alphabet[Int(value >> 6 & 63)]
                        written += 1
                    }
                }
                return written
            }
        }
    }

    /// Decodes canonical base64url: the URL-safe alphabet, no padding, zero trailing bits; nil
    /// for anything else (including every other spelling of the same bytes).
    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        decode(bytes: text.utf8)
    }

    /// ``decode(_:)`` for text already in bytes (a segment of a token).
    public static func decode(bytes: some Collection<UInt8>) -> [UInt8]? {
        if let decoded = bytes.withContiguousStorageIfAvailable({ decode($0, table: reverse, strict: true) }) { return decoded }
        return Array(bytes).withUnsafeBufferPointer { decode($0, table: reverse, strict: true) }
    }

    /// Decodes base64url or standard base64, with or without `=` padding, ignoring trailing bits.
    /// Only for key material a provider publishes (JWK `n`, `e`, `x`, `y`), where some publishers
    /// pad and no key is derived from the text; never for tokens.
    public static func decodeLenient(_ text: some StringProtocol) -> [UInt8]? {
        var input = Array(text.utf8)
        while input.last == UInt8(ascii: "=") { input.removeLast() }
        return input.withUnsafeBufferPointer { decode($0, table: lenientReverse, strict: false) }
    }

    /// Four characters at a time into three bytes, written straight into the result's storage (an
    /// ID token, over a kilobyte, is decoded on every sign-in). A byte outside the alphabet is
    /// 0xff in `table`: the values are or-ed together as they go and checked once at the end,
    /// where any such byte has left its high bits set.
    private static func decode(_ input: UnsafeBufferPointer<UInt8>, table: [UInt8], strict: Bool) -> [UInt8]? {
        let (quads, rest) = input.count.quotientAndRemainder(dividingBy: 4)
        guard rest != 1 else { return nil }
        let length = quads * 3 + (rest == 0 ? 0 : rest - 1)
        return table.withUnsafeBufferPointer { table -> [UInt8]? in
            var seen: UInt8 = 0
            let output = [UInt8](unsafeUninitializedCapacity: length) { buffer, initialized in
                var read = 0
                var written = 0
                for _ in 0..<quads {
                    let (a, b, c, d) = (
                        table[Int(input[read])], table[Int(input[read + 1])], table[Int(input[read + 2])], table[Int(input[read + 3])]
                    )
                    seen |= a | b | c | d
                    let value = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c) << 6 | UInt32(d)
                    buffer[written] = UInt8(truncatingIfNeeded: value >> 16)
                    buffer[written + 1] = UInt8(truncatingIfNeeded: value >> 8)
                    buffer[written + 2] = UInt8(truncatingIfNeeded: value)
                    read += 4
                    written += 3
                }
                if rest > 0 {
                    let a = table[Int(input[read])]
                    let b = table[Int(input[read + 1])]
                    let c = rest == 3 ? table[Int(input[read + 2])] : 0
                    seen |= a | b | c
                    let value = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c) << 6
                    buffer[written] = UInt8(truncatingIfNeeded: value >> 16)
                    if rest == 3 { buffer[written + 1] = UInt8(truncatingIfNeeded: value >> 8) }
                    // The bits of the last character past the last whole byte must be zero (RFC 4648 §3.5).
                    if strict, (rest == 2 ? b & 0x0f : c & 0x03) != 0 { seen = 0xff }
                }
                initialized = length
            }
            return seen & 0xc0 == 0 ? output : nil
        }
    }

    /// The value of one hexadecimal digit, either case; nil for any other byte.
    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// Lower-case hexadecimal, written straight into the string's storage (a digest's hex was
    /// an array grown six times, then copied).
    public static func hex(_ bytes: some ContiguousBytes) -> String {
        bytes.withUnsafeBytes { raw in
            String(unsafeUninitializedCapacity: raw.count * 2) { output in
                for (index, byte) in raw.enumerated() {
                    output[2 * index] = hexDigits[Int(byte >> 4)]
                    output[2 * index + 1] = hexDigits[Int(byte & 15)]
                }
                return raw.count * 2
            }
        }
    }

    /// `count` random bytes from the kernel's CSPRNG in one `getrandom` call (the standard
    /// library's generator makes one per 8 bytes). Should the kernel refuse, which it does not
    /// for a valid buffer, the standard library's generator fills them instead (it traps rather
    /// than return bytes that are not random).
    public static func randomBytes(_ count: Int) -> [UInt8] {
        let count = max(0, count)
        var bytes = [UInt8](repeating: 0, count: count)
        let filled = bytes.withUnsafeMutableBytes { buffer -> Bool in
            guard let base = buffer.baseAddress else { return true }
            return authgate_fill_random(base, buffer.count) == 0
        }
        if !filled {
            var generator = SystemRandomNumberGenerator()
            for index in bytes.indices { bytes[index] = generator.next() }
        }
        return bytes
    }
}
