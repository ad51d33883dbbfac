import RedisBridge
import Testing

@testable import AuthGateCore

/// Reading Redis's `INFO memory` for whether it may evict keys.
@Suite("Key eviction")
struct KeyEvictionTests {
    private func info(maxmemory: String?, policy: String?) -> String {
        var lines = ["# Memory", "used_memory:1065048", "used_memory_human:1.02M"]
        if let maxmemory { lines.append("maxmemory:\(maxmemory)") }
        lines.append("maxmemory_human:0B")
        if let policy { lines.append("maxmemory_policy:\(policy)") }
        lines.append("allocator_frag_ratio:1.20")
        return lines.joined(separator: "\r\n") + "\r\n"
    }

    @Test("eviction is possible with a limit and any policy but noeviction; never without a limit or with noeviction")
    func policies() {
        for policy in ["allkeys-lru", "allkeys-lfu", "allkeys-random", "volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl"] {
            #expect(
                KeyEviction.fromRedisMemoryInfo(info(maxmemory: "104857600", policy: policy)) == .possible(policy: policy, maxmemory: 104_857_600))
            #expect(KeyEviction.fromRedisMemoryInfo(info(maxmemory: "0", policy: policy)) == .never)
        }
        #expect(KeyEviction.fromRedisMemoryInfo(info(maxmemory: "104857600", policy: "noeviction")) == .never)
    }

    @Test("a reply without the two lines, or with a limit that is not one number, is unknown, never taken for safe")
    func unreadable() {
        for (maxmemory, policy) in [(nil, "noeviction"), ("0", nil), ("1e9", "allkeys-lru"), ("-1", "allkeys-lru"), ("", "noeviction"), ("100", "")] {
            guard case .unknown = KeyEviction.fromRedisMemoryInfo(info(maxmemory: maxmemory, policy: policy)) else {
                Issue.record("\(String(describing: maxmemory)), \(String(describing: policy)) was read as known")
                continue
            }
        }
        guard case .unknown = KeyEviction.fromRedisMemoryInfo("") else {
            Issue.record("an empty reply was read as known")
            return
        }
    }
}
