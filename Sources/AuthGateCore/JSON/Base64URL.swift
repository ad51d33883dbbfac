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
        decode(Array(text.utf8), table: reverse, strict: true)
    }

    /// ``decode(_:)`` for text already in bytes (a segment of a token).
    public static func decode(bytes: some Collection<UInt8>) -> [UInt8]? {
        decode(Array(bytes), table: reverse, strict: true)
    }

    /// Decodes base64url or standard base64, with or without `=` padding, ignoring trailing bits.
    /// Only for key material a provider publishes (JWK `n`, `e`, `x`, `y`), where some publishers
    /// pad and no key is derived from the text; never for tokens.
    public static func decodeLenient(_ text: some StringProtocol) -> [UInt8]? {
        var input = Array(text.utf8)
        while input.last == UInt8(ascii: "=") { input.removeLast() }
        return decode(input, table: lenientReverse, strict: false)
    }

    private static func decode(_ input: [UInt8], table: [UInt8], strict: Bool) -> [UInt8]? {
        guard input.count % 4 != 1 else { return nil }
        var output = [UInt8]()
        output.reserveCapacity(input.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for byte in input {
            let value = table[Int(byte)]
            guard value != 0xff else { return nil }
            accumulator = (accumulator << 6 | UInt32(value)) & 0xffff
            bits += 6
            if bits >= 8 {
                bits -= 8
                output.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
            }
        }
        // The bits of the last character past the last whole byte must be zero (RFC 4648 §3.5).
        if strict, bits > 0, accumulator & ((1 << UInt32(bits)) - 1) != 0 { return nil }
        return output
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
