import RedisBridge

/// Parsers for the value syntaxes the configuration accepts: durations, byte sizes, rates and CIDRs.
public enum ConfigurationValueParsers {
    /// The longest duration any value may spell: about 100 years. Anything longer, from a
    /// configuration file or a request (`ban_duration`), is refused rather than overflowing.
    public static let maximumDuration = Duration.seconds(100 * 365 * 86_400)

    /// Parses `3600s`, `10m`, `1h30m`, `250ms`, `2d`, or `0`; nil for anything else, and for
    /// anything longer than ``maximumDuration`` (the arithmetic is checked: no input traps).
    public static func duration(_ text: String) -> Duration? {
        let trimmed = text.trimmed
        if trimmed == "0" { return .zero }
        let limit = maximumDuration.components.seconds * 1000
        var milliseconds: Int64 = 0
        var digits = ""
        var index = trimmed.startIndex
        var sawComponent = false
        while index < trimmed.endIndex {
            let character = trimmed[index]
            if character.isASCII, character.isNumber {
                guard digits.count < 18 else { return nil }
                digits.append(character)
                index = trimmed.index(after: index)
                continue
            }
            guard let value = DecimalInteger.parse(digits, in: 0...limit) else { return nil }
            var unit = String(character)
            let next = trimmed.index(after: index)
            if character == "m", next < trimmed.endIndex, trimmed[next] == "s" {
                unit = "ms"
                index = trimmed.index(after: next)
            } else {
                index = next
            }
            let unitMilliseconds: Int64
            switch unit {
            case "ms": unitMilliseconds = 1
            case "s": unitMilliseconds = 1000
            case "m": unitMilliseconds = 60_000
            case "h": unitMilliseconds = 3_600_000
            case "d": unitMilliseconds = 86_400_000
            default: return nil
            }
            let (part, overflow) = value.multipliedReportingOverflow(by: unitMilliseconds)
            guard !overflow, part <= limit - milliseconds else { return nil }
            milliseconds += part
            digits = ""
            sawComponent = true
        }
        guard digits.isEmpty, sawComponent else { return nil }
        return .milliseconds(milliseconds)
    }

    /// Formats a duration the way ``duration(_:)`` reads it, using the largest exact unit.
    /// The shortest configuration spelling of a duration.
    public static func format(_ duration: Duration) -> String {
        let (whole, overflow) = duration.components.seconds.multipliedReportingOverflow(by: 1000)
        guard !overflow else { return "\(duration.components.seconds)s" }
        let milliseconds = whole + duration.components.attoseconds / 1_000_000_000_000_000
        if milliseconds == 0 { return "0s" }
        if milliseconds % 1000 != 0 { return "\(milliseconds)ms" }
        let seconds = milliseconds / 1000
        if seconds % 86_400 == 0 { return "\(seconds / 86_400)d" }
        if seconds % 3600 == 0 { return "\(seconds / 3600)h" }
        if seconds % 60 == 0 { return "\(seconds / 60)m" }
        return "\(seconds)s"
    }

    /// Parses a byte size: `1048576`, `512KiB`, `1MiB`, `10MB`, `2GiB`.
    static func byteSize(_ text: String) -> Int? {
        let trimmed = text.trimmed
        let digits = trimmed.prefix(while: { $0.isASCII && $0.isNumber })
        guard let value = DecimalInteger.parse(digits, in: 0...Int.max) else { return nil }
        let units: [String: Int] = [
            "": 1, "B": 1, "KB": 1000, "KiB": 1024, "MB": 1_000_000, "MiB": 1 << 20, "GB": 1_000_000_000, "GiB": 1 << 30
        ]
        guard let multiplier = units[String(trimmed.dropFirst(digits.count)).trimmed] else { return nil }
        let (product, overflow) = value.multipliedReportingOverflow(by: multiplier)
        return overflow ? nil : product
    }

    /// Formats a byte size with the largest exact binary unit.
    static func format(bytes: Int) -> String {
        if bytes > 0, bytes % (1 << 30) == 0 { return "\(bytes >> 30)GiB" }
        if bytes > 0, bytes % (1 << 20) == 0 { return "\(bytes >> 20)MiB" }
        if bytes > 0, bytes % 1024 == 0 { return "\(bytes >> 10)KiB" }
        return "\(bytes)"
    }

    /// Whether `text` is an absolute `http` or `https` URL in the form the gateway fetches from a
    /// provider: a host in ``HostName``'s rules with an optional port and no user or password
    /// (which every log line naming the URL would show), then an optional path and query of
    /// printable ASCII without spaces, and no fragment.
    public static func isFetchableURL(_ text: String) -> Bool {
        let schemeLength: Int
        if text.hasPrefix("https://") {
            schemeLength = 8
        } else if text.hasPrefix("http://") {
            schemeLength = 7
        } else {
            return false
        }
        let rest = text.utf8.dropFirst(schemeLength)
        let end = rest.firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") } ?? rest.endIndex
        guard HostName.isValidAuthority(rest[..<end]) else { return false }
        return rest[end...].allSatisfy { (0x21...0x7E).contains($0) && $0 != UInt8(ascii: "#") }
    }

    /// What a configuration problem says of a provider URL that ``isFetchableURL(_:)`` refuses:
    /// the value is not repeated, as it may hold a password.
    static let fetchableURLRule =
        "must be an http:// or https:// URL: a host with an optional port (no user or password), then a path without spaces; no fragment"

    /// Parses a rate `150/5m`: a count per window.
    static func rate(_ text: String) -> RateLimit? {
        let parts = text.split(separator: "/", maxSplits: 1).map { $0.trimmed }
        guard parts.count == 2, let count = DecimalInteger.parse(parts[0], in: 1...1_000_000_000) else { return nil }
        let windowText = parts[1].first?.isNumber == true ? parts[1] : "1" + parts[1]
        guard let window = duration(windowText), window > .zero else { return nil }
        return RateLimit(count: count, window: window)
    }
}

extension StringProtocol {
    /// The text without leading and trailing whitespace and newlines.
    var trimmed: String {
        var text = Substring(self)
        while let first = text.first, first.isWhitespace { text = text.dropFirst() }
        while let last = text.last, last.isWhitespace { text = text.dropLast() }
        return String(text)
    }
}
