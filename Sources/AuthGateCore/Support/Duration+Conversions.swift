#if canImport(FoundationEssentials)
    public import FoundationEssentials
#else
    public import Foundation
#endif

extension Duration {
    /// The duration in whole nanoseconds (saturating).
    public var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !overflow else { return seconds < 0 ? .min : .max }
        let (total, overflowed) = product.addingReportingOverflow(attoseconds / 1_000_000_000)
        return overflowed ? (seconds < 0 ? .min : .max) : total
    }

    /// The duration in seconds, as a `Double` (for `Date` arithmetic).
    public var inSeconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}

extension Date {
    /// The seconds since 1970 of years 0 through 9999, the range every conversion clamps or checks to.
    static let unixSecondsRange: ClosedRange<Double> = -62_135_596_800...253_402_300_799

    /// The milliseconds since 1970 of years 0 through 9999, for dates read as whole milliseconds.
    static let unixMillisecondsRange: ClosedRange<Int64> = -62_135_596_800_000...253_402_300_799_999

    /// Seconds since 1970, whole, clamped to years 0 through 9999: a date from outside (a token's
    /// claim, a command-line option) cannot trap the conversion.
    public var unixSeconds: Int64 {
        Int64(min(max(timeIntervalSince1970, Self.unixSecondsRange.lowerBound), Self.unixSecondsRange.upperBound))
    }

    /// Milliseconds since 1970, rounded to the nearest, clamped like ``unixSeconds``.
    public var unixMilliseconds: Int64 { unixMilliseconds(rounded: .toNearestOrAwayFromZero) }

    /// This date at the millisecond the stores keep (Redis records hold Unix milliseconds): the
    /// `now` an account change stamps on its records, so that its answer shows the timestamps
    /// every later read shows, and the records and texts kept for those reads are reused.
    public var atStoredMillisecond: Date { Date(timeIntervalSince1970: Double(unixMilliseconds) / 1000) }

    /// Milliseconds since 1970, rounded by `rule`, clamped like ``unixSeconds``.
    public func unixMilliseconds(rounded rule: FloatingPointRoundingRule) -> Int64 {
        Int64((min(max(timeIntervalSince1970, Self.unixSecondsRange.lowerBound), Self.unixSecondsRange.upperBound) * 1000).rounded(rule))
    }
}
