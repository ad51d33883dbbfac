#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
public import AuthGateCore
import HTTPTypes
public import Hummingbird
import Logging

/// Applies `rate_limits` per client IP to `POST /auth/v1/token`, `/signup` and `/nonce`:
/// over the budget, 429 `over_request_rate_limit` "Request rate limit reached" with `Retry-After`.
/// Counters live in the store, so every replica shares them.
public struct RateLimitMiddleware: RouterMiddleware {
    public typealias Context = AuthGateRequestContext

    private let limiter: RateLimiter
    private let limits: RateLimitsConfiguration
    private let trustedProxies: [IPNetwork]

    public init(store: any AuthStore, limits: RateLimitsConfiguration, trustedProxies: [IPNetwork]) {
        self.limiter = RateLimiter(store: store)
        self.limits = limits
        self.trustedProxies = trustedProxies
    }

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard request.method == .post, let (bucket, limit) = budget(for: request.uri.path) else { return try await next(request, context) }
        let client = ClientAddress.resolve(request.headers, peer: context.remoteAddress, trustedProxies: trustedProxies).address
        let decision: RateLimiter.Decision
        do {
            decision = try await limiter.check(bucket: bucket, client: client, limit: limit, now: Date())
        } catch {
            context.logger.error("rate limit store unavailable", metadata: ["gw.error": "\(error)"])
            throw GoTrueError(.serviceUnavailable, code: "unexpected_failure", message: "The session store is unavailable; try again")
        }
        guard decision.isAllowed else {
            context.logger.notice("rate limited", metadata: ["gw.bucket": "\(bucket)", "gw.outcome": "over_request_rate_limit"])
            throw GoTrueError(
                .tooManyRequests, code: "over_request_rate_limit", message: "Request rate limit reached",
                headers: [.retryAfter: String(decision.retryAfterSeconds)]
            )
        }
        return try await next(request, context)
    }

    private func budget(for path: String) -> (String, RateLimit)? {
        switch path {
        case "/auth/v1/token": return limits.token.map { ("token", $0) }
        case "/auth/v1/signup": return limits.signup.map { ("signup", $0) }
        case "/auth/v1/nonce": return limits.nonce.map { ("nonce", $0) }
        default: return nil
        }
    }
}
