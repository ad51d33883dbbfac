/// ASCII case folding over bytes: how header names, schemes and protocol tokens are matched
/// (RFC 9110 §5.1), letters without regard to case and every other byte exactly. Text is compared
/// through `StringProtocol.equalsLowercaseASCII`.
enum ASCIICase {
    /// `byte` with an ASCII upper-case letter lowered.
    @inline(__always)
    static func lowered(_ byte: UInt8) -> UInt8 {
        byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte
    }

    /// Whether `bytes`, ASCII letters lowered, are `lower` (already lower case): a loop over
    /// contiguous bytes, run for several header names of every request.
    static func equals(_ bytes: UnsafeBufferPointer<UInt8>, lower: UnsafeBufferPointer<UInt8>) -> Bool {
        guard bytes.count == lower.count else { return false }
        for index in 0..<bytes.count where lowered(bytes[index]) != lower[index] { return false }
        return true
    }
}
