/// Reads a whole number that someone else wrote in decimal (a configuration value, a URL's port, a
/// header, a Redis reply) in one spelling: ASCII digits, with a leading `-` only where the range
/// admits negative numbers, and nothing else.
///
/// Swift's `Int("+5")` is 5, so a value checked as text and a value read as a number could differ;
/// this refuses a sign, spaces, `_` and non-ASCII digits, and anything outside the range, with
/// checked arithmetic so that no length of input can trap. Leading zeros are read (`007` is 7):
/// the number, not the text, is what is used.
///
/// ```swift
/// DecimalInteger.parse("6379", in: 1...65535)  // 6379
/// DecimalInteger.parse("+6379", in: 1...65535) // nil
/// ```
public enum DecimalInteger {
    /// The number `bytes` spell, or nil when they are not one in `range`. Inlinable, so that the
    /// request path (a `Host` port) gets it specialized for its byte views.
    @inlinable
    public static func parse<Bytes: Collection<UInt8>>(_ bytes: Bytes, in range: ClosedRange<Int64>) -> Int64? {
        var digits = bytes[...]
        let negative = digits.first == UInt8(ascii: "-") && range.lowerBound < 0
        if negative { digits = digits.dropFirst() }
        guard !digits.isEmpty else { return nil }
        var value: Int64 = 0
        for byte in digits {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            let digit = Int64(byte &- UInt8(ascii: "0"))
            let (shifted, shiftOverflow) = value.multipliedReportingOverflow(by: 10)
            let (next, addOverflow) = negative ? shifted.subtractingReportingOverflow(digit) : shifted.addingReportingOverflow(digit)
            guard !shiftOverflow, !addOverflow else { return nil }
            value = next
        }
        return range.contains(value) ? value : nil
    }

    /// The number `text` spells, or nil when it is not one in `range`.
    public static func parse(_ text: some StringProtocol, in range: ClosedRange<Int64>) -> Int64? {
        parse(text.utf8, in: range)
    }

    /// The number `text` spells, or nil when it is not one in `range`.
    public static func parse(_ text: some StringProtocol, in range: ClosedRange<Int>) -> Int? {
        parse(text.utf8, in: Int64(range.lowerBound)...Int64(range.upperBound)).map(Int.init)
    }
}
