/// `replay:`: single use of provider ID tokens and server-issued nonces.
public struct ReplayConfiguration: Sendable {
    /// Record every accepted ID token and refuse it a second time.
    public var enabled: Bool
    /// How long past a token's `exp` its replay record is kept (covers clock skew).
    public var leeway: Duration
    /// Lifetime of a nonce issued by `POST /auth/v1/nonce`.
    public var serverNonceTTL: Duration

    init(reading section: ConfigurationSection) {
        enabled = section.bool("enabled", default: true)
        leeway = section.duration("leeway", default: .seconds(60), maximum: .seconds(3600))
        serverNonceTTL = section.duration("server_nonce_ttl", default: .seconds(600), minimum: .seconds(10), maximum: .seconds(86_400))
        section.finish()
    }
}
