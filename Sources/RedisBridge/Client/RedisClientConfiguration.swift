public import NIOCore

/// How a ``RedisClient`` connects, how long it waits, and how it recovers.
public struct RedisClientConfiguration: Sendable {
    /// Server address, credentials and database.
    public var url: RedisURL
    /// Pipelined connections in the pool; commands are spread over them round-robin.
    public var poolSize: Int
    /// Longest wait for a TCP connection (and its handshake).
    public var connectTimeout: TimeAmount
    /// Longest wait for one command's reply; on expiry the connection's pending commands fail and it closes.
    public var commandTimeout: TimeAmount
    /// Most bytes one reply may occupy before it completes.
    public var maxReplyBytes: Int
    /// First wait after a failed connection attempt; doubles per failure up to ``maxReconnectBackoff``.
    public var minReconnectBackoff: TimeAmount
    /// Longest wait between connection attempts.
    public var maxReconnectBackoff: TimeAmount
    /// Name announced with `CLIENT SETNAME`, or nil to skip it.
    public var clientName: String?
    /// When set, every new connection asks these Sentinels for the current master first (its
    /// host and port replace ``url``'s; the credentials and database stay), and only a node that
    /// says it is the master is used.
    public var sentinel: RedisSentinelConfiguration?
    /// Trust, server name and client certificate for `rediss://` (the Sentinels too, when the URL
    /// is `rediss://`); not used for `redis://`.
    public var tls: TLSClientConfiguration

    /// Creates a configuration with production defaults.
    public init(
        url: RedisURL,
        poolSize: Int = 4,
        connectTimeout: TimeAmount = .seconds(2),
        commandTimeout: TimeAmount = .seconds(2),
        maxReplyBytes: Int = 64 * 1024 * 1024,
        minReconnectBackoff: TimeAmount = .milliseconds(50),
        maxReconnectBackoff: TimeAmount = .seconds(2),
        clientName: String? = "authgate",
        sentinel: RedisSentinelConfiguration? = nil,
        tls: TLSClientConfiguration = TLSClientConfiguration()
    ) {
        self.sentinel = sentinel
        self.tls = tls
        self.url = url
        self.poolSize = poolSize
        self.connectTimeout = connectTimeout
        self.commandTimeout = commandTimeout
        self.maxReplyBytes = maxReplyBytes
        self.minReconnectBackoff = minReconnectBackoff
        self.maxReconnectBackoff = maxReconnectBackoff
        self.clientName = clientName
    }

    /// The wait before connection attempt number `failures + 1`, with up to 20 % jitter so that
    /// many replicas do not reconnect in lockstep.
    ///
    /// Any backoffs a caller set work: the doubling and the jitter saturate instead of
    /// overflowing, and a negative bound counts as none.
    func reconnectBackoff(afterFailures failures: Int) -> TimeAmount {
        let exponent = min(max(failures - 1, 0), 20)
        let ceiling = max(0, maxReconnectBackoff.nanoseconds)
        let (doubled, overflow) = max(0, minReconnectBackoff.nanoseconds).multipliedReportingOverflow(by: Int64(1) << exponent)
        let base = min(overflow ? .max : doubled, ceiling)
        let jitter = base > 5 ? Int64.random(in: 0...(base / 5)) : 0
        return .nanoseconds(min(TimeAmount.nanoseconds(base).addingSaturated(.nanoseconds(jitter)).nanoseconds, ceiling))
    }
}
