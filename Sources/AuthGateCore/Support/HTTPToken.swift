/// RFC 9110 §5.6.2 `token`: one or more `tchar` (`!#$%&'*+-.^_`|~`, digits and letters; no byte of
/// 128 or more). What a field name is made of, and a method: the one check behind every place
/// that accepts or writes one (the HTTP/1.1 answer encoder, per field; a route's CORS header lists,
/// once at configuration time).
package enum HTTPToken {
    /// Whether `byte` is a `tchar`: a lookup in a 128-bit set.
    @inlinable
    package static func isTokenCharacter(_ byte: UInt8) -> Bool {
        // Bit n of `low` is byte n (0-63), of `high` byte 64 + n (64-127).
        let low: UInt64 = 0x03FF_6CFA_0000_0000
        let high: UInt64 = 0x57FF_FFFF_C7FF_FFFE
        let set = byte < 64 ? low : byte < 128 ? high : 0
        return set & (1 << UInt64(byte & 63)) != 0
    }

    /// Whether `bytes` is a token: not empty, and every byte a `tchar`. A plain loop over
    /// contiguous bytes: the answer encoder calls it for every field it writes, and a generic
    /// `allSatisfy` here was left unspecialised across the module boundary (about 9,000
    /// instructions per answer of witness calls, seen by bench/exchange/instructions.sh).
    @inlinable
    package static func isToken(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        if bytes.isEmpty { return false }
        for byte in bytes where !isTokenCharacter(byte) { return false }
        return true
    }

    /// Whether `text`'s UTF-8 is a token.
    package static func isToken(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { isToken($0) }
    }
}
