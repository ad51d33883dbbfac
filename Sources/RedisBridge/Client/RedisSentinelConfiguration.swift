/// Where the Sentinels watching a master are, so the client can find the current master and
/// follow a failover.
public struct RedisSentinelConfiguration: Sendable, Equatable {
    /// One Sentinel's address.
    public typealias Node = RedisServerAddress

    /// The name the Sentinels know the master by (`sentinel monitor <name> …`).
    public var masterName: String
    /// The Sentinels, asked in order until one answers.
    public var nodes: [Node]
    /// The user AuthGate signs in to the Sentinels as (an ACL user of the Sentinels); nil for
    /// the default user.
    public var username: String?
    /// The Sentinels' own password (`requirepass` of the Sentinels, or ``username``'s), if any.
    public var password: String?

    public init(masterName: String, nodes: [Node], username: String? = nil, password: String? = nil) {
        self.masterName = masterName
        self.nodes = nodes
        self.username = username
        self.password = password
    }
}
