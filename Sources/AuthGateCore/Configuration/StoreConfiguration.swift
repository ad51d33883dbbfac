import NIOCore
public import RedisBridge

/// `store:`: where users, sessions, nonces and replay windows live.
public struct StoreConfiguration: Sendable {
    /// Which store.
    public enum Kind: String, Sendable, CaseIterable {
        /// In process: development and tests only; nothing survives a restart.
        case memory
        /// Redis, shared by every replica.
        case redis
    }

    /// `store.redis:`.
    public struct Redis: Sendable {
        /// Address, database and credentials (the password from a file or the environment).
        public var url: RedisURL
        /// Prefix for every key (`ag:`).
        public var keyPrefix: String
        /// Pipelined connections per replica.
        public var poolSize: Int
        public var connectTimeout: Duration
        public var commandTimeout: Duration
        /// When set, the master is found through these Sentinels (the URL's host and port are not used).
        public var sentinel: RedisSentinelConfiguration?
        /// For `rediss://`: the CAs to trust, the expected server name, the client certificate.
        public var tls: TLSClientConfiguration
        /// `min_replicas_acked` and `replica_ack_timeout`: account writes (a new or rotated
        /// session, a new user, a linked identity, a ban, a deletion) answer only once this many
        /// replicas have them (`WAIT`); nil when 0.
        public var replicaAcknowledgement: RedisReplicaAcknowledgement?
        /// `reconnect.min_backoff`: first wait after a failed connection attempt, doubling per failure.
        public var minReconnectBackoff: Duration
        /// `reconnect.max_backoff`: longest wait between attempts.
        public var maxReconnectBackoff: Duration
        /// `record_cache_size`: decoded users, identities and sessions kept per replica, each kind,
        /// each reused only while the bytes read are the ones it was decoded from (so never
        /// stale); 0 keeps none.
        public var recordCacheSize: Int

        /// `record_cache_size` when the file does not set it.
        public static let defaultRecordCacheSize = 10_000
    }

    public var kind: Kind
    /// Set when ``kind`` is ``Kind/redis``.
    public var redis: Redis?

    init(reading section: ConfigurationSection, secrets: SecretReader) {
        kind = section.choice("kind", default: .memory)
        let redisSection = section.section("redis")
        let urlText = redisSection.string("url", default: "redis://127.0.0.1:6379/0")
        var url: RedisURL?
        do {
            url = try RedisURL(parsing: urlText)
        } catch let error as RedisError {
            redisSection.report("url", error.message)
        } catch {
            redisSection.report("url", "\(error)")
        }
        if url?.password != nil, !redisSection.isOverridden("url") {
            redisSection.report(
                "url",
                "a password in the configuration file is refused; use store.redis.password_file or the AUTHGATE_STORE_REDIS_PASSWORD environment variable"
                    + " (redis://name@host is the password-only shorthand; an ACL user is redis://name:@host)"
            )
        }
        if redisSection.fileContains("password") {
            redisSection.report("password", "secrets are refused in the configuration file; use password_file or AUTHGATE_STORE_REDIS_PASSWORD")
        }
        if let password = secrets.secret(in: redisSection, key: "password") { url?.password = password }
        let keyPrefix = redisSection.string("key_prefix", default: "ag:")
        if keyPrefix.contains("{") || keyPrefix.contains("}") {
            redisSection.report("key_prefix", "\"\(keyPrefix)\" must not contain { or }: they would break the hash-tag key layout")
        }
        let poolSize = redisSection.int("pool_size", default: 4, in: 1...256)
        let connectTimeout = redisSection.duration("connect_timeout", default: .seconds(2), minimum: .milliseconds(10))
        let commandTimeout = redisSection.duration("command_timeout", default: .seconds(2), minimum: .milliseconds(10))
        let sentinel = Self.sentinel(reading: redisSection.section("sentinel"), secrets: secrets)
        let minReplicasAcked = redisSection.int("min_replicas_acked", default: 0, in: 0...16)
        let replicaAckTimeout = redisSection.duration(
            "replica_ack_timeout", default: .seconds(1), minimum: .milliseconds(1), maximum: .seconds(60))
        let recordCacheSize = redisSection.int("record_cache_size", default: Redis.defaultRecordCacheSize, in: 0...1_000_000)
        let reconnect = redisSection.section("reconnect")
        let minBackoff = reconnect.duration("min_backoff", default: .milliseconds(50), minimum: .milliseconds(1), maximum: .seconds(60))
        let maxBackoff = reconnect.duration("max_backoff", default: .seconds(2), minimum: .milliseconds(1), maximum: .seconds(300))
        if maxBackoff < minBackoff { reconnect.report("max_backoff", "must not be shorter than min_backoff") }
        reconnect.finish()
        var tls = TLSClientConfiguration()
        if redisSection.contains("tls") {
            tls = TLSClientConfiguration.read(redisSection.section("tls"))
            if let url, !url.tls { redisSection.report("tls", "TLS settings need a rediss:// URL (url is redis://, which is plain TCP)") }
        }
        redisSection.finish()
        if kind == .redis, let url {
            redis = Redis(
                url: url, keyPrefix: keyPrefix, poolSize: poolSize, connectTimeout: connectTimeout, commandTimeout: commandTimeout,
                sentinel: sentinel,
                tls: tls,
                replicaAcknowledgement: minReplicasAcked > 0
                    ? RedisReplicaAcknowledgement(replicas: minReplicasAcked, timeout: .nanoseconds(replicaAckTimeout.nanoseconds)) : nil,
                minReconnectBackoff: minBackoff, maxReconnectBackoff: maxBackoff, recordCacheSize: recordCacheSize
            )
        } else {
            redis = nil
        }
        section.finish()
    }

    /// `store.redis.sentinel: { master_name, nodes: [host:port, …], username, password_file }`;
    /// nil when absent.
    private static func sentinel(reading section: ConfigurationSection, secrets: SecretReader) -> RedisSentinelConfiguration? {
        let masterName = section.string("master_name", default: "")
        let nodeTexts = section.stringList("nodes")
        let username = section.string("username", default: "")
        if section.fileContains("password") {
            section.report("password", "secrets are refused in the configuration file; use password_file or AUTHGATE_STORE_REDIS_SENTINEL_PASSWORD")
        }
        let password = secrets.secret(in: section, key: "password")
        section.finish()
        if masterName.isEmpty, nodeTexts.isEmpty { return nil }
        if masterName.isEmpty { section.report("master_name", "name the master the Sentinels monitor") }
        if nodeTexts.isEmpty { section.report("nodes", "list at least one Sentinel as host:port") }
        let nodes = nodeTexts.compactMap { text -> RedisSentinelConfiguration.Node? in
            guard let node = Self.node(text) else {
                section.report("nodes", "\"\(text)\" is not host:port (IPv6 as [address]:port)")
                return nil
            }
            return node
        }
        return RedisSentinelConfiguration(masterName: masterName, nodes: nodes, username: username.isEmpty ? nil : username, password: password)
    }

    private static func node(_ text: String) -> RedisSentinelConfiguration.Node? {
        let host: Substring
        let portText: Substring
        if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
            host = text[text.index(after: text.startIndex)..<close]
            guard text[close...].hasPrefix("]:") else { return nil }
            portText = text[text.index(close, offsetBy: 2)...]
        } else if let colon = text.lastIndex(of: ":") {
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
        } else {
            return nil
        }
        guard !host.isEmpty, let port = DecimalInteger.parse(portText, in: 1...65535) else { return nil }
        return RedisSentinelConfiguration.Node(host: String(host), port: port)
    }
}
