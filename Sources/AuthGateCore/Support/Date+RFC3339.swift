#if canImport(FoundationEssentials)
    public import FoundationEssentials
#else
    public import Foundation
#endif

extension Date {
    /// RFC 3339 in UTC with milliseconds (`2026-11-23T09:15:10.123Z`), the text
    /// `Date.ISO8601FormatStyle(includingFractionalSeconds: true)` writes, computed directly from
    /// the seconds since 1970 (civil-from-days, no calendar object): every user and token response
    /// carries several. Dates outside years 1600 through 9999 go through Foundation's formatter.
    public var rfc3339WithMilliseconds: String {
        withRFC3339WithMilliseconds { String(decoding: $0, as: UTF8.self) }
    }

    /// Calls `body` with the bytes of ``rfc3339WithMilliseconds`` (ASCII: digits and `-:T.Z`),
    /// written on the stack: a JSON writer copies them without a `String` in between.
    package func withRFC3339WithMilliseconds<Result>(_ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
        // Foundation splits the interval since 2001 into whole seconds and a fraction it truncates
        // to the millisecond; dates before 1600 it counts in the Julian calendar.
        let interval = timeIntervalSinceReferenceDate
        guard interval.isFinite, Self.gregorianReferenceRange.contains(interval) else {
            var text = Date.ISO8601FormatStyle(includingFractionalSeconds: true).format(self)
            return text.withUTF8(body)
        }
        let whole = interval.rounded(.down)
        let millisecond = min(999, Int64(((interval - whole) * 1000).rounded(.down)))
        let seconds = Int64(whole) + 978_307_200
        let (days, secondOfDay) = Self.floorDivision(seconds, 86_400)
        let (year, month, day) = Self.civilDate(days: days)
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 24) { text in
            var end = 0
            func digits(_ value: Int64, _ count: Int) {
                var divisor: Int64 = 1
                for _ in 1..<count { divisor *= 10 }
                var rest = value
                while divisor > 0 {
                    text[end] = UInt8(ascii: "0") + UInt8(truncatingIfNeeded: rest / divisor)
                    end += 1
                    rest %= divisor
                    divisor /= 10
                }
            }
            func character(_ byte: UInt8) {
                text[end] = byte
                end += 1
            }
            digits(year, 4)
            character(UInt8(ascii: "-"))
            digits(month, 2)
            character(UInt8(ascii: "-"))
            digits(day, 2)
            character(UInt8(ascii: "T"))
            digits(secondOfDay / 3600, 2)
            character(UInt8(ascii: ":"))
            digits(secondOfDay / 60 % 60, 2)
            character(UInt8(ascii: ":"))
            digits(secondOfDay % 60, 2)
            character(UInt8(ascii: "."))
            digits(millisecond, 3)
            character(UInt8(ascii: "Z"))
            return body(UnsafeBufferPointer(rebasing: text[..<end]))
        }
    }

    /// Howard Hinnant's civil_from_days: days since 1970-01-01 to a proleptic Gregorian date.
    package static func civilDate(days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let shifted = days + 719_468
        let era = Self.floorDivision(shifted, 146_097).quotient
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// Howard Hinnant's days_from_civil, the inverse of ``civilDate(days:)``: days since
    /// 1970-01-01 of a proleptic Gregorian date; nil when the date does not exist (30 February,
    /// month 13), which shows as a date that does not come back the same.
    package static func days(year: Int64, month: Int64, day: Int64) -> Int64? {
        guard (1...12).contains(month), (1...31).contains(day) else { return nil }
        let shiftedYear = month <= 2 ? year - 1 : year
        let era = Self.floorDivision(shiftedYear, 400).quotient
        let yearOfEra = shiftedYear - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        return civilDate(days: days) == (year, month, day) ? days : nil
    }

    /// Seconds since 2001 from 1600-01-01 to the end of 9999, where the direct computation is used.
    private static let gregorianReferenceRange: ClosedRange<Double> = -12_654_403_200...252_423_993_599

    /// Quotient and remainder rounded towards negative infinity (the remainder is never negative).
    package static func floorDivision(_ value: Int64, _ divisor: Int64) -> (quotient: Int64, remainder: Int64) {
        let quotient = value / divisor
        let remainder = value % divisor
        return remainder < 0 ? (quotient - 1, remainder + divisor) : (quotient, remainder)
    }
}
