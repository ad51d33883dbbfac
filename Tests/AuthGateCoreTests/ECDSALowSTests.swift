import Testing

@testable import AuthGateCore

@Suite("ECDSA low s")
struct ECDSALowSTests {
    let order = ECDSALowS.p256Order

    /// `order >> 1`, big-endian: the largest low `s`.
    var half: [UInt8] {
        order.indices.map { index in order[index] >> 1 | (index > 0 ? order[index - 1] & 1 : 0) << 7 }
    }

    /// `value + delta` for a small signed delta, big-endian, wrapping at the width (the test's own
    /// arithmetic, apart from the code under test).
    func adding(_ delta: Int, to value: [UInt8]) -> [UInt8] {
        var result = value
        var carry = delta
        for index in stride(from: result.count - 1, through: 0, by: -1) where carry != 0 {
            let sum = Int(result[index]) + carry
            result[index] = UInt8(truncatingIfNeeded: sum)
            carry = sum >> 8
        }
        return result
    }

    func signature(s: [UInt8]) -> [UInt8] { [UInt8](repeating: 0xA5, count: 32) + s }

    @Test("s is low up to order / 2 and high from there, at every boundary")
    func boundaries() {
        let cases: [([UInt8], Bool)] = [
            ([UInt8](repeating: 0, count: 32), true),
            (adding(1, to: [UInt8](repeating: 0, count: 32)), true),
            (adding(-1, to: half), true),
            (half, true),
            (adding(1, to: half), false),
            (adding(2, to: half), false),
            ([0x80] + [UInt8](repeating: 0, count: 31), false),
            (adding(-1, to: order), false),
            ([UInt8](repeating: 0xFF, count: 32), false),
            ([0x7F] + [UInt8](repeating: 0xFF, count: 31), false)
        ]
        for (s, low) in cases {
            #expect(ECDSALowS.isLow(signature(s: s), order: order) == low, "s = \(s)")
        }
    }

    @Test("isLow agrees with a plain comparison to order / 2 on random s")
    func randomAgreement() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            var s = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
            // Half of the draws near the boundary, where a carry decides.
            if Bool.random(using: &generator) { s = adding(Int.random(in: -300...300, using: &generator), to: half) }
            let expected = s.lexicographicallyPrecedes(half) || s == half
            #expect(ECDSALowS.isLow(signature(s: s), order: order) == expected, "s = \(s)")
        }
    }

    @Test("normalized replaces a high s by order - s, keeps r and a low s, and leaves other lengths alone")
    func normalization() {
        let low = signature(s: half)
        #expect(ECDSALowS.normalized(low, order: order) == low)
        let high = signature(s: adding(1, to: half))
        let normalized = ECDSALowS.normalized(high, order: order)
        #expect(Array(normalized[..<32]) == Array(high[..<32]))
        // (order - s) + s == order.
        var sum = [UInt8](repeating: 0, count: 32)
        var carry = 0
        for index in stride(from: 31, through: 0, by: -1) {
            let total = Int(normalized[32 + index]) + Int(high[32 + index]) + carry
            sum[index] = UInt8(truncatingIfNeeded: total)
            carry = total >> 8
        }
        #expect(sum == order && carry == 0)
        #expect(ECDSALowS.isLow(normalized, order: order))
        #expect(ECDSALowS.normalized([1, 2, 3], order: order) == [1, 2, 3])
        #expect(!ECDSALowS.isLow([1, 2, 3], order: order))
        #expect(!ECDSALowS.isLow([], order: []))
    }
}
