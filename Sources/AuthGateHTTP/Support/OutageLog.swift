import RedisBridge

/// The lines written when a request fails because something it depends on is down (the store, an
/// upstream, a provider's keys), or because a client floods (over a rate limit, over
/// `max_connections`): every such request fails the same way, and anyone can send requests, so
/// each kind of failure is logged at most once per 10 s, with the number held back in
/// `gw.repeated`. The access line still records every request.
enum OutageLog {
    private static let throttle = RepeatedLogThrottle(interval: .seconds(10))

    /// Whether to write the line for `kind` now: the number held back since the last one, or nil.
    /// `kind` names a failure of something configured (a rate-limit bucket, an upstream and how it
    /// failed), never a value from a request, so the kinds are bounded by the configuration.
    static func admit(_ kind: String) -> Int? {
        throttle.admit(kind)
    }
}
