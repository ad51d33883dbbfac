/// `rate_limits:`: budgets shared across replicas, per client IP (per user for `user_update`);
/// `off` disables one.
public struct RateLimitsConfiguration: Sendable {
    /// `POST /auth/v1/token` (every grant).
    public var token: RateLimit?
    /// `POST /auth/v1/signup` (anonymous sign-ins).
    public var signup: RateLimit?
    /// `POST /auth/v1/nonce`.
    public var nonce: RateLimit?
    /// `PUT /auth/v1/user` and `POST /auth/v1/user/apple/authorization_code`, per user.
    public var userUpdate: RateLimit?
    /// The per-address limits count an IPv6 client by its network of this many bits
    /// (``ClientRateKey``): 64 by default, 32 to 128.
    public var ipv6PrefixLength: Int

    init(reading section: ConfigurationSection) {
        token = section.rate("token", default: RateLimit(count: 150, window: .seconds(300)))
        signup = section.rate("signup", default: RateLimit(count: 30, window: .seconds(3600)))
        nonce = section.rate("nonce", default: RateLimit(count: 300, window: .seconds(300)))
        userUpdate = section.rate("user_update", default: RateLimit(count: 60, window: .seconds(60)))
        ipv6PrefixLength = section.int("ipv6_prefix_length", default: 64, in: 32...128)
        section.finish()
    }
}
