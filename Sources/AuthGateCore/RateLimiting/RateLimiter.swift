#if canImport(FoundationEssentials)
    public import FoundationEssentials
#else
    public import Foundation
#endif

/// Per-client request budgets shared by every replica: a fixed-window counter per
/// (bucket, client, window) in the store.
public struct RateLimiter: Sendable {
    /// The outcome of one request's check.
    public struct Decision: Sendable, Hashable {
        public let isAllowed: Bool
        /// Seconds until the window resets (for `Retry-After`).
        public let retryAfterSeconds: Int
    }

    private let store: any AuthStore

    public init(store: any AuthStore) {
        self.store = store
    }

    /// Counts one request of `client` against `limit` in `bucket` (`token`, `signup`, `nonce`).
    public func check(bucket: String, client: String, limit: RateLimit, now: Date) async throws -> Decision {
        let windowSeconds = max(1, limit.window.inSeconds)
        let window = (now.timeIntervalSince1970 / windowSeconds).rounded(.down)
        let windowEnd = Date(timeIntervalSince1970: (window + 1) * windowSeconds)
        let count = try await store.increment("rl:\(bucket):\(client):\(Int64(window))", expiresAt: windowEnd)
        return Decision(isAllowed: count <= limit.count, retryAfterSeconds: max(1, Int(windowEnd.timeIntervalSince(now).rounded(.up))))
    }
}
