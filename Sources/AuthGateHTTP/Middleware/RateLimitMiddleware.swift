public import AuthGateCore
import HTTPTypes
public import Hummingbird
import Logging

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Applies one of `rate_limits` per client IP (an IPv6 client by its network of
/// `rate_limits.ipv6_prefix_length` bits: ``ClientRateKey``) to the endpoints it is attached to: over the budget,
/// 429 `over_request_rate_limit` "Request rate limit reached" with `Retry-After`. Counters live in
/// the store, so every replica shares them.
///
/// It is attached to routes (a router group), not to the whole router: it counts the endpoint the
/// router resolved, however its path was spelled (`/auth/v1/signup/` and `/auth/v1/signup` are one
/// endpoint, one budget).
public struct RateLimitMiddleware: RouterMiddleware {
    public typealias Context = AuthGateRequestContext

    private let limiter: RateLimiter
    private let bucket: String
    private let limit: RateLimit
    private let trustedProxies: [IPNetwork]
    private let ipv6PrefixLength: Int

    public init(bucket: String, limit: RateLimit, store: any AuthStore, trustedProxies: [IPNetwork], ipv6PrefixLength: Int = 64) {
        self.limiter = RateLimiter(store: store)
        self.bucket = bucket
        self.limit = limit
        self.trustedProxies = trustedProxies
        self.ipv6PrefixLength = ipv6PrefixLength
    }

    public func handle(_ request: Request, context: Context, next: @concurrent (Request, Context) async throws -> Response) async throws -> Response {
        let client = ClientAddress.resolve(request.headers, peer: context.remoteAddress, trustedProxies: trustedProxies).address
        let key = ClientRateKey.key(for: client, ipv6PrefixLength: ipv6PrefixLength)
        try await Self.enforce(limiter, bucket: bucket, key: key, limit: limit, logger: context.logger)
        return try await next(request, context)
    }

    /// Counts one request of `key` against `limit` in `bucket`, or throws GoTrue's 429 (503 when
    /// the store cannot count).
    static func enforce(_ limiter: RateLimiter, bucket: String, key: String, limit: RateLimit, logger: Logger) async throws {
        let decision: RateLimiter.Decision
        do {
            decision = try await limiter.check(bucket: bucket, client: key, limit: limit, now: Date())
        } catch {
            if let repeated = OutageLog.admit(bucket) {
                logger.error(
                    "rate limit store unavailable", metadata: ["gw.error": "\(error)", "gw.bucket": "\(bucket)", "gw.repeated": "\(repeated)"])
            }
            throw GoTrueError(.serviceUnavailable, code: "unexpected_failure", message: "The session store is unavailable; try again")
        }
        guard decision.isAllowed else {
            // A client over its budget usually goes on sending: one line per bucket per 10 s, with
            // the count (each refusal keeps its access line, status 429).
            if let repeated = OutageLog.admit("rate limited \(bucket)") {
                logger.notice(
                    "rate limited", metadata: ["gw.bucket": "\(bucket)", "gw.outcome": "over_request_rate_limit", "gw.repeated": "\(repeated)"])
            }
            throw GoTrueError(
                .tooManyRequests, code: "over_request_rate_limit", message: "Request rate limit reached",
                headers: [.retryAfter: String(decision.retryAfterSeconds)]
            )
        }
    }
}
