import Synchronization

/// Lets a repeated log line through once per interval per key and counts the ones held back, so an
/// outage that fails every request writes a line every few seconds ("… 339 more since"), not one
/// per request.
///
/// ```swift
/// if let suppressed = throttle.admit("rate_limit_store") {
///     logger.error("rate limit store unavailable", metadata: ["gw.repeated": "\(suppressed)"])
/// }
/// ```
public final class RepeatedLogThrottle: Sendable {
    private struct Entry {
        var loggedAt: ContinuousClock.Instant
        var suppressed: Int
    }

    private let interval: Duration
    private let entries = Mutex<[String: Entry]>([:])

    /// - Parameter interval: at most one line per key in this long.
    public init(interval: Duration = .seconds(10)) {
        self.interval = interval
    }

    /// Whether a line for `key` may be written now: the number of lines held back since the last
    /// one written (0 the first time), or nil to hold this one back.
    public func admit(_ key: String, now: ContinuousClock.Instant = .now) -> Int? {
        entries.withLock { entries in
            if var entry = entries[key], now - entry.loggedAt < interval {
                entry.suppressed += 1
                entries[key] = entry
                return nil
            }
            let suppressed = entries[key]?.suppressed ?? 0
            entries[key] = Entry(loggedAt: now, suppressed: 0)
            return suppressed
        }
    }
}
