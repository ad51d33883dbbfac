/// ECDSA signatures are malleable: when `(r, s)` verifies, so does `(r, n - s)`. AuthGate signs its
/// own tokens with the low `s` (at most `n / 2`, as Bitcoin's BIP 62 and Ethereum do) and refuses a
/// high `s` on its own tokens, so each token has one spelling and a cache or deny-list keyed on
/// the token text cannot be sidestepped. Signatures are JWS raw form: `r || s`, big-endian.
enum ECDSALowS {
    /// The order `n` of the P-256 group.
    static let p256Order: [UInt8] = [
        0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
        0xBC, 0xE6, 0xFA, 0xAD, 0xA7, 0x17, 0x9E, 0x84, 0xF3, 0xB9, 0xCA, 0xC2, 0xFC, 0x63, 0x25, 0x51
    ]

    /// Whether the `s` half of `signature` is at most `order / 2`; false for a signature of the
    /// wrong length. `2s` is compared with `order` byte by byte from the most significant end
    /// (byte `i` of `2s` is `s[i] << 1`, with the top bit of `s[i + 1]` carried in), without a
    /// number built in memory: every minted token and every verified one passes here.
    static func isLow(_ signature: [UInt8], order: [UInt8]) -> Bool {
        guard !order.isEmpty, signature.count == 2 * order.count else { return false }
        // 2s has a byte more than the order when the top bit of s is set: then it is greater.
        guard signature[order.count] & 0x80 == 0 else { return false }
        for index in 0..<order.count {
            let carried = index + 1 < order.count ? signature[order.count + index + 1] >> 7 : 0
            let doubled = signature[order.count + index] << 1 | carried
            if doubled != order[index] { return doubled < order[index] }
        }
        return true
    }

    /// `signature` with its `s` replaced by `order - s` when it is high; unchanged otherwise.
    static func normalized(_ signature: [UInt8], order: [UInt8]) -> [UInt8] {
        guard signature.count == 2 * order.count, !isLow(signature, order: order) else { return signature }
        var result = signature
        var borrow: Int16 = 0
        for index in stride(from: order.count - 1, through: 0, by: -1) {
            var difference = Int16(order[index]) - Int16(signature[order.count + index]) - borrow
            borrow = difference < 0 ? 1 : 0
            if difference < 0 { difference += 256 }
            result[order.count + index] = UInt8(difference)
        }
        return result
    }
}
