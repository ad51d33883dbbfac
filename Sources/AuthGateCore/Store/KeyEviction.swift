import RedisBridge

/// Whether the store may drop records on its own. Redis does once it reaches `maxmemory` under any
/// `maxmemory-policy` but `noeviction`: the keys it picks may be single-use marks (an ID token or
/// nonce accepted twice), rate-limit counters, revocations (a replica that starts afterwards lets
/// a revoked token through) or identity indexes (a returning user given a new account), and
/// `volatile-*` policies pick exactly the keys with an expiry, the single-use marks among them.
/// Under `noeviction` a full Redis refuses writes instead, which AuthGate answers with 503: it
/// fails closed.
public enum KeyEviction: Sendable, Hashable {
    /// Records leave only when AuthGate removes them or they expire.
    case never
    /// Redis evicts keys once it holds `maxmemory` bytes, with this `maxmemory-policy`.
    case possible(policy: String, maxmemory: Int64)
    /// The store would not say; why (`INFO` refused to this user, say: Redis's words, for the log
    /// rather than for `/readyz`).
    case unknown(String)

    /// Reads `INFO memory`'s `maxmemory` and `maxmemory_policy` lines: eviction is possible when
    /// both a limit and a policy other than `noeviction` are set (without a limit Redis never
    /// evicts).
    public static func fromRedisMemoryInfo(_ text: String) -> KeyEviction {
        var maxmemory: Int64?
        var policy: String?
        for line in text.split(whereSeparator: \.isNewline) {
            if line.hasPrefix("maxmemory:") {
                maxmemory = DecimalInteger.parse(line.dropFirst("maxmemory:".count), in: 0...Int64.max)
            } else if line.hasPrefix("maxmemory_policy:") {
                policy = String(line.dropFirst("maxmemory_policy:".count))
            }
        }
        guard let maxmemory, let policy, !policy.isEmpty else { return .unknown("INFO memory gave no maxmemory or maxmemory_policy") }
        return maxmemory == 0 || policy == "noeviction" ? .never : .possible(policy: policy, maxmemory: maxmemory)
    }

    /// What `/readyz` and the log say about it (no secret: a policy name and a size).
    public var detail: String {
        switch self {
        case .never:
            return "ok"
        case .possible(let policy, let maxmemory):
            return "Redis evicts keys once it holds maxmemory (\(maxmemory) bytes) under maxmemory-policy \(policy): single-use marks, "
                + "revocations and identity indexes could vanish; set maxmemory-policy to noeviction"
        case .unknown:
            return "unknown: the store would not say whether it evicts keys; make sure Redis runs with maxmemory-policy noeviction"
        }
    }
}
