public import AuthGateCore
import Logging
public import RedisBridge

/// The two stores every store-backed behaviour is tested on.
public enum TestStoreKind: String, CaseIterable, Sendable, CustomStringConvertible {
    case memory, redis
    public var description: String { rawValue }
}

/// Runs `body` with a fresh store of `kind`: a new memory store, or the shared test Redis under a
/// key prefix of its own (disconnected afterwards, also when `body` throws).
public func withTestStore(_ kind: TestStoreKind, _ body: (any AuthStore) async throws -> Void) async throws {
    switch kind {
    case .memory:
        try await body(MemoryAuthStore())
    case .redis:
        try await withRedisStore(at: try await SharedRedis.url(), body)
    }
}

/// Runs `body` with a Redis store on the server at `url` (a fresh key prefix, two pooled
/// connections), disconnected afterwards, also when `body` throws. A URL where nothing listens
/// makes a store whose every call fails, as in an outage.
public func withRedisStore(at url: RedisURL, _ body: (RedisAuthStore) async throws -> Void) async throws {
    let client = RedisClient(configuration: .init(url: url, poolSize: 2), logger: Logger(label: "test-store"))
    do {
        try await body(RedisAuthStore(redis: client, keyPrefix: "test:\(UInt32.random(in: 0...UInt32.max)):"))
    } catch {
        await client.shutdown()
        throw error
    }
    await client.shutdown()
}
