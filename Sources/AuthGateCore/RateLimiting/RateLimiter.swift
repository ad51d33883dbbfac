#if canImport(FoundationEssentials)
    public import FoundationEssentials
#else
    public import Foundation
#endif

/// Per-client request budgets shared by every replica: a sliding window (``SlidingWindow``) over
/// two fixed-window counters per (bucket, client) in the store, `rl:{<bucket>:<client>}:<window>`
/// (one hash slot for both, for Redis Cluster).
public struct RateLimiter: Sendable {
    /// The outcome of one request's check.
    public struct Decision: Sendable, Hashable {
        public let isAllowed: Bool
        /// Seconds until a request would be admitted (for `Retry-After`).
        public let retryAfterSeconds: Int
    }

    private let store: any AuthStore

    public init(store: any AuthStore) {
        self.store = store
    }

    /// Counts one request of `client` against `limit` in `bucket` (`token`, `signup`, `nonce`).
    public func check(bucket: String, client: String, limit: RateLimit, now: Date) async throws -> Decision {
        let window = SlidingWindow(limit: limit, now: now)
        let counter = "rl:{\(bucket):\(client)}:"
        let counts = try await store.countRequest(
            in: window, currentKey: counter + String(window.index), previousKey: counter + String(window.index - 1))
        return Decision(isAllowed: counts.isAdmitted, retryAfterSeconds: counts.isAdmitted ? 0 : window.retryAfterSeconds(counts))
    }
}
