public import Logging
import NIOCore
import RedisBridge
public import ServiceLifecycle

/// Builds the store the configuration asks for, plus the services it needs running.
public enum AuthStoreFactory {
    /// The store and the long-lived services (the Redis client) to run beside it.
    public struct Assembly: Sendable {
        public let store: any AuthStore
        public let services: [any Service]
    }

    /// Makes the configured store. Redis connections open on first use. `accessTokenTTL` decides
    /// how long the revocation stream keeps an entry.
    public static func make(_ configuration: StoreConfiguration, accessTokenTTL: Duration, logger: Logger) -> Assembly {
        switch configuration.kind {
        case .memory:
            return Assembly(store: MemoryAuthStore(), services: [])
        case .redis:
            guard let redis = configuration.redis else { preconditionFailure("a validated configuration has store.redis when store.kind is redis") }
            let client = RedisClient(
                configuration: RedisClientConfiguration(
                    url: redis.url,
                    poolSize: redis.poolSize,
                    connectTimeout: .nanoseconds(redis.connectTimeout.nanoseconds),
                    commandTimeout: .nanoseconds(redis.commandTimeout.nanoseconds),
                    minReconnectBackoff: .nanoseconds(redis.minReconnectBackoff.nanoseconds),
                    maxReconnectBackoff: .nanoseconds(redis.maxReconnectBackoff.nanoseconds),
                    sentinel: redis.sentinel,
                    tls: redis.tls
                ),
                logger: logger
            )
            return Assembly(
                store: RedisAuthStore(
                    redis: client, keyPrefix: redis.keyPrefix, replicaAcknowledgement: redis.replicaAcknowledgement,
                    recordCacheSize: redis.recordCacheSize, revocationRetention: RevocationView.retention(accessTokenTTL: accessTokenTTL)),
                services: [client])
        }
    }
}
