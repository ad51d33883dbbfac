import AuthGateCore

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The `Date` header of AuthGate's own answers (IMF-fixdate, RFC 9110 5.6.7:
/// `Sun, 06 Nov 1994 08:49:37 GMT`), as Hummingbird writes it, made at most once a second per
/// connection.
struct HTTPDate {
    private var second = Int64.min
    private var text = ""

    /// The text for the current second.
    mutating func current(_ now: Date = Date()) -> String {
        let seconds = Int64(now.timeIntervalSince1970.rounded(.down).clamped(to: 0...Self.lastSecond))
        if seconds != second {
            second = seconds
            text = Self.imfFixdate(secondsSince1970: seconds)
        }
        return text
    }

    /// 9999-12-31T23:59:59Z: the last second with a four-digit year.
    static let lastSecond: Double = 253_402_300_799

    private static let weekdays = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// IMF-fixdate for `seconds` since 1970 (0 through ``lastSecond``).
    static func imfFixdate(secondsSince1970 seconds: Int64) -> String {
        let (days, secondOfDay) = Date.floorDivision(seconds, 86_400)
        let (year, month, day) = Date.civilDate(days: days)
        func twoDigits(_ value: Int64) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let weekday = weekdays[Int(Date.floorDivision(days, 7).remainder)]
        let clock = "\(twoDigits(secondOfDay / 3600)):\(twoDigits(secondOfDay / 60 % 60)):\(twoDigits(secondOfDay % 60))"
        return "\(weekday), \(twoDigits(day)) \(months[Int(month - 1)]) \(year) \(clock) GMT"
    }
}

extension Double {
    fileprivate func clamped(to range: ClosedRange<Double>) -> Double {
        guard !isNaN else { return range.lowerBound }
        return Swift.min(Swift.max(self, range.lowerBound), range.upperBound)
    }
}
