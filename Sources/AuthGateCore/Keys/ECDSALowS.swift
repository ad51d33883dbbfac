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
    /// wrong length.
    static func isLow(_ signature: [UInt8], order: [UInt8]) -> Bool {
        guard signature.count == 2 * order.count else { return false }
        let s = Array(signature[order.count...])
        return compare(doubled(s), order) != .greater
    }

    /// `signature` with its `s` replaced by `order - s` when it is high; unchanged otherwise.
    static func normalized(_ signature: [UInt8], order: [UInt8]) -> [UInt8] {
        guard signature.count == 2 * order.count, !isLow(signature, order: order) else { return signature }
        return Array(signature[..<order.count]) + subtract(order, Array(signature[order.count...]))
    }

    private enum Ordering { case less, equal, greater }

    /// `2 * value` with one more leading byte (no overflow).
    private static func doubled(_ value: [UInt8]) -> [UInt8] {
        var result = [UInt8](repeating: 0, count: value.count + 1)
        var carry: UInt16 = 0
        for index in stride(from: value.count - 1, through: 0, by: -1) {
            let sum = UInt16(value[index]) << 1 | carry
            result[index + 1] = UInt8(truncatingIfNeeded: sum)
            carry = sum >> 8
        }
        result[0] = UInt8(carry)
        return result
    }

    /// Compares big-endian unsigned numbers of any lengths.
    private static func compare(_ left: [UInt8], _ right: [UInt8]) -> Ordering {
        let width = max(left.count, right.count)
        let a = [UInt8](repeating: 0, count: width - left.count) + left
        let b = [UInt8](repeating: 0, count: width - right.count) + right
        for (x, y) in zip(a, b) where x != y { return x < y ? .less : .greater }
        return .equal
    }

    /// `left - right` for big-endian numbers of equal length with `left >= right`.
    private static func subtract(_ left: [UInt8], _ right: [UInt8]) -> [UInt8] {
        var result = [UInt8](repeating: 0, count: left.count)
        var borrow: Int16 = 0
        for index in stride(from: left.count - 1, through: 0, by: -1) {
            var difference = Int16(left[index]) - Int16(right[index]) - borrow
            borrow = difference < 0 ? 1 : 0
            if difference < 0 { difference += 256 }
            result[index] = UInt8(difference)
        }
        return result
    }
}
