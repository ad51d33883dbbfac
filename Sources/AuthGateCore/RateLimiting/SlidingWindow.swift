#if canImport(FoundationEssentials)
    public import FoundationEssentials
#else
    public import Foundation
#endif

/// One request's place in a budget of ``RateLimit/count`` requests per ``RateLimit/window``,
/// counted over a sliding window: the requests admitted in the current fixed window, plus those of
/// the window before weighted by how much of it the sliding window still covers (Cloudflare's
/// approximation). A fixed window alone let a client spend its budget at the end of one window and
/// again at the start of the next, twice the budget in a moment; here a client that spent it must
/// wait as the old requests slide out. Only admitted requests are counted, so a client that keeps
/// sending while refused does not push its own wait further.
///
/// A value type with the arithmetic (the decision, the counters' expiry, `Retry-After`); the store
/// reads the two counters and counts the request atomically (``AuthStore/countRequest(in:currentKey:previousKey:)``).
public struct SlidingWindow: Sendable, Hashable {
    /// What the store read, and whether it counted the request.
    public struct Counts: Sendable, Hashable {
        public let isAdmitted: Bool
        /// Requests admitted in the current fixed window (this one included when admitted).
        public let current: Int
        /// Requests admitted in the window before.
        public let previous: Int

        public init(isAdmitted: Bool, current: Int, previous: Int) {
            self.isAdmitted = isAdmitted
            self.current = current
            self.previous = previous
        }
    }

    /// Requests allowed per window.
    public let limit: Int
    /// The window's length in milliseconds (at least a second).
    public let windowMilliseconds: Int64
    /// The current fixed window's number (milliseconds since the epoch / window).
    public let index: Int64
    /// Milliseconds into the current fixed window.
    public let elapsedMilliseconds: Int64

    /// Parts per million of the previous window's count that still count: the share of the
    /// sliding window that lies in it, rounded up (never in the client's favour).
    public var previousWeight: Int64 {
        ((windowMilliseconds - elapsedMilliseconds) * Self.million + windowMilliseconds - 1) / windowMilliseconds
    }

    static let million: Int64 = 1_000_000
    /// Counts read from the store are clamped to this before any arithmetic (a corrupted counter
    /// must not overflow): far above any budget the configuration accepts (at most 10^9).
    static let largestCount: Int64 = 2_000_000_000

    public init(limit: RateLimit, now: Date) {
        self.limit = Int(Self.clamped(limit.count))
        windowMilliseconds = max(1000, min(limit.window.nanoseconds / 1_000_000, Int64(Int32.max) * 1000))
        let nowMilliseconds = max(0, now.unixMilliseconds)
        index = nowMilliseconds / windowMilliseconds
        elapsedMilliseconds = nowMilliseconds % windowMilliseconds
    }

    /// Whether one more request is admitted after `current` and `previous` admitted ones:
    /// `previous × weight + current + 1 ≤ limit`, in parts per million (the store's script decides
    /// by the same sum).
    public func admits(current: Int, previous: Int) -> Bool {
        Self.clamped(previous) * previousWeight + (Self.clamped(current) + 1) * Self.million <= Int64(limit) * Self.million
    }

    /// When the current window's counter may go: once the window after it has ended (until then
    /// it is that window's previous one).
    public var currentExpiresAt: Date {
        Date(timeIntervalSince1970: Double((index + 2) * windowMilliseconds) / 1000)
    }

    /// Whole seconds (at least 1) until a request would be admitted, when no other is admitted
    /// meanwhile: later in this window as the previous one's requests slide out, or in the next
    /// as this one's do.
    public func retryAfterSeconds(_ counts: Counts) -> Int {
        // In floating point: an estimate, and room × window could pass Int64 for a long window.
        let (current, previous) = (Double(Self.clamped(counts.current)), Double(Self.clamped(counts.previous)))
        let (window, elapsed) = (Double(windowMilliseconds), Double(elapsedMilliseconds))
        let room = Double(limit) - 1 - current
        var wait: Double
        if room >= 0 {
            // This window: previous × (W − e) / W ≤ room, so e ≥ W × (1 − room / previous).
            let needed = previous == 0 ? 0 : window * (previous - room) / previous
            wait = max(0, needed - elapsed)
        } else {
            // The next window: current × (W − e′) / W ≤ limit − 1, so e′ ≥ W × (1 − (limit − 1) / current).
            let needed = current == 0 ? 0 : window * (current - (Double(limit) - 1)) / current
            wait = window - elapsed + max(0, needed)
        }
        let seconds = (min(wait, 2 * window) / 1000).rounded(.up)
        return max(1, Int(seconds))
    }

    private static func clamped(_ count: Int) -> Int64 { min(max(Int64(count), 0), largestCount) }
}
