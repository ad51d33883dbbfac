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
        redisSection.finish()
        if kind == .redis, let url {
            redis = Redis(url: url, keyPrefix: keyPrefix, poolSize: poolSize, connectTimeout: connectTimeout, commandTimeout: commandTimeout)
        } else {
            redis = nil
        }
        section.finish()
    }
}
