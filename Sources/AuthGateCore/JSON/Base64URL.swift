/// Base64url (RFC 4648 §5) without padding, as JWS and JWK use it, plus lower-case hex. Byte-level
/// code: these run several times per request.
public enum Base64URL {
    private static let alphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
    private static let reverse: [UInt8] = {
        var table = [UInt8](repeating: 0xff, count: 256)
        for (index, byte) in alphabet.enumerated() { table[Int(byte)] = UInt8(index) }
        table[Int(UInt8(ascii: "+"))] = 62
        table[Int(UInt8(ascii: "/"))] = 63
        return table
    }()
    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    /// Encodes without `=` padding.
    public static func encode(_ bytes: some Collection<UInt8>) -> String {
        let input = Array(bytes)
        var output = [UInt8]()
        output.reserveCapacity((input.count * 4 + 2) / 3)
        var index = 0
        while index + 3 <= input.count {
            let value = UInt32(input[index]) << 16 | UInt32(input[index + 1]) << 8 | UInt32(input[index + 2])
            output.append(alphabet[Int(value >> 18 & 63)])
            output.append(alphabet[Int(value >> 12 & 63)])
            output.append(alphabet[Int(value >> 6 & 63)])
            output.append(alphabet[Int(value & 63)])
            index += 3
        }
        let remaining = input.count - index
        if remaining == 1 {
            let value = UInt32(input[index]) << 16
            output.append(alphabet[Int(value >> 18 & 63)])
            output.append(alphabet[Int(value >> 12 & 63)])
        } else if remaining == 2 {
            let value = UInt32(input[index]) << 16 | UInt32(input[index + 1]) << 8
            output.append(alphabet[Int(value >> 18 & 63)])
            output.append(alphabet[Int(value >> 12 & 63)])
            output.append(alphabet[Int(value >> 6 & 63)])
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// Decodes base64url (or standard base64), with or without `=` padding; nil for anything else.
    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        var input = Array(text.utf8)
        while input.last == UInt8(ascii: "=") { input.removeLast() }
        guard input.count % 4 != 1 else { return nil }
        var output = [UInt8]()
        output.reserveCapacity(input.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for byte in input {
            let value = reverse[Int(byte)]
            guard value != 0xff else { return nil }
            accumulator = accumulator << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                output.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
            }
        }
        return output
    }

    /// Lower-case hexadecimal.
    public static func hex(_ bytes: some Sequence<UInt8>) -> String {
        var output = [UInt8]()
        for byte in bytes {
            output.append(hexDigits[Int(byte >> 4)])
            output.append(hexDigits[Int(byte & 15)])
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// `count` random bytes from the system generator, eight at a time.
    public static func randomBytes(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        var bytes = [UInt8]()
        bytes.reserveCapacity(count + 8)
        while bytes.count < count {
            withUnsafeBytes(of: generator.next() as UInt64) { bytes.append(contentsOf: $0) }
        }
        return Array(bytes.prefix(count))
    }
}
