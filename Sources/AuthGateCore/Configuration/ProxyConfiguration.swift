/// `proxy:`: how the edge proxy authenticates and forwards (routes themselves are `routes:`).
public struct ProxyConfiguration: Sendable {
    /// Prefix of the identity headers set for upstreams (and stripped from clients).
    public var identityHeaderPrefix: String
    /// How far behind the revocation feed may be before each request checks the store. At least
    /// 500 ms: a healthy feed hears from Redis every 250 ms (its blocking read) plus a 100 ms heartbeat.
    public var revocationMaxStaleness: Duration
    /// Most verified access tokens kept in memory.
    public var tokenCacheSize: Int
    /// Most connections to one upstream host.
    public var maxConnectionsPerUpstream: Int
    /// Largest WebSocket frame relayed, either way; a larger one closes the connection with 1009.
    public var maxWebSocketFrame: Int
    /// Most WebSocket tunnels open at once in the process (each holds an upstream connection of
    /// its own); a handshake beyond them is answered 503. Over HTTP/2 one client connection
    /// carries up to `server.http2.max_concurrent_streams` of them, so `server.max_connections`
    /// alone does not bound them.
    public var maxWebSocketTunnels: Int

    init(reading section: ConfigurationSection) {
        identityHeaderPrefix = section.string("identity_header_prefix", default: "X-AuthGate-")
        if identityHeaderPrefix.count < 2 || !identityHeaderPrefix.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }) {
            section.report("identity_header_prefix", "\"\(identityHeaderPrefix)\" must be letters, digits and -, like X-AuthGate-")
        }
        revocationMaxStaleness = section.duration(
            "revocation_max_staleness", default: .seconds(2), minimum: .milliseconds(500), maximum: .seconds(60))
        tokenCacheSize = section.int("token_cache_size", default: 100_000, in: 1...10_000_000)
        maxConnectionsPerUpstream = section.int("max_connections_per_upstream", default: 256, in: 1...65_536)
        maxWebSocketFrame = section.byteSize("max_websocket_frame", default: 1 << 20)
        maxWebSocketTunnels = section.int("max_websocket_tunnels", default: 10_000, in: 1...1_000_000)
        section.finish()
    }
}
