public import AuthGateCore
import Logging
import RedisBridge

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
        let client = RedisClient(configuration: .init(url: try await SharedRedis.url(), poolSize: 2), logger: Logger(label: "test-store"))
        do {
            try await body(RedisAuthStore(redis: client, keyPrefix: "test:\(UInt32.random(in: 0...UInt32.max)):"))
        } catch {
            await client.shutdown()
            throw error
        }
        await client.shutdown()
    }
}
