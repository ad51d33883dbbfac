import RedisBridge

/// The lines written when a request fails because the store is down: during an outage every
/// request fails the same way, so each kind (a rate-limit bucket, the nonce store) is logged at
/// most once per 10 s, with the count held back.
enum StoreErrorLog {
    private static let throttle = RepeatedLogThrottle(interval: .seconds(10))

    /// Whether to write the line for `kind` now: the number held back since the last one, or nil.
    static func admit(_ kind: String) -> Int? {
        throttle.admit(kind)
    }
}
