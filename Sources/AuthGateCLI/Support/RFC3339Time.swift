import AuthGateCore
import Foundation

/// A moment an operator types: an RFC 3339 time with its offset (`2026-11-24T10:00:00Z`,
/// `2026-11-24T12:00:00.25+02:00`) or a date alone (`2026-11-24`, midnight UTC), read strictly:
/// the digits' count is fixed, `T` and `Z` are upper case, every field is in its range, the date
/// exists (no 30 February), and nothing may follow. Foundation's ISO 8601 parsers accept trailing
/// text, roll 30 February over into March and take one-digit months; an audit query must not
/// quietly mean another moment than the one written.
enum RFC3339Time {
    /// The moment `text` names, or nil when it is not exactly one of the two forms.
    static func parse(_ text: String) -> Date? {
        let bytes = Array(text.utf8)
        guard bytes.count >= 10, let year = number(bytes, 0, 4), bytes[4] == UInt8(ascii: "-"), let month = number(bytes, 5, 2),
            bytes[7] == UInt8(ascii: "-"), let day = number(bytes, 8, 2), let days = Date.days(year: year, month: month, day: day)
        else { return nil }
        if bytes.count == 10 { return Date(timeIntervalSince1970: Double(days * 86_400)) }
        guard bytes.count >= 20, bytes[10] == UInt8(ascii: "T"), let hour = number(bytes, 11, 2), bytes[13] == UInt8(ascii: ":"),
            let minute = number(bytes, 14, 2), bytes[16] == UInt8(ascii: ":"), let second = number(bytes, 17, 2), hour < 24, minute < 60,
            second < 60
        else { return nil }
        var index = 19
        var fraction = 0.0
        if bytes[index] == UInt8(ascii: ".") {
            let start = index + 1
            var end = start
            while end < bytes.count, end - start < 9, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[end]) { end += 1 }
            guard end > start, let digits = number(bytes, start, end - start) else { return nil }
            fraction = Double(digits) / pow(10, Double(end - start))
            index = end
        }
        let offset: Int64
        if index + 1 == bytes.count, bytes[index] == UInt8(ascii: "Z") {
            offset = 0
        } else if index + 6 == bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-"),
            let hours = number(bytes, index + 1, 2), bytes[index + 3] == UInt8(ascii: ":"), let minutes = number(bytes, index + 4, 2), hours < 24,
            minutes < 60
        {
            offset = (bytes[index] == UInt8(ascii: "+") ? 1 : -1) * (hours * 3600 + minutes * 60)
        } else {
            return nil
        }
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset
        return Date(timeIntervalSince1970: Double(seconds) + fraction)
    }

    /// The decimal number of `count` digits at `start`; nil if any is not a digit or past the end.
    private static func number(_ bytes: [UInt8], _ start: Int, _ count: Int) -> Int64? {
        guard start >= 0, count > 0, start + count <= bytes.count else { return nil }
        var value: Int64 = 0
        for byte in bytes[start..<start + count] {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
            value = value * 10 + Int64(byte - UInt8(ascii: "0"))
        }
        return value
    }
}
